#!/usr/bin/env python3
"""Table of bench/two-core-vs-mpi.sh: DIR THRESHOLD_NS COLLECTIVE.

Per placement class (near / far: every probe around a run under / over the threshold), per size:
each library's best time over its runs of that class and both placements (out of place, in place),
the median of those runs' better placement, and Open MPI / jccl of the bests (> 1: jccl faster).
"""
import json
import statistics
import sys
from pathlib import Path


def times(path, coll):
    """{bytes: min(oop, ip) time in us} of one run's JSON."""
    d = json.loads(Path(path).read_text())
    out = {}
    for run in d["runs"]:
        for row in run["rows"]:
            if row["collective"] != coll:
                continue
            t = [row[p]["time_us"] for p in ("oop", "ip") if row.get(p) and row[p].get("time_us") is not None]
            if t:
                out[row["bytes"]] = min(t)
    return out


def size(b):
    for unit, f in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if b >= f and b % f == 0:
            return f"{b // f} {unit}"
    return f"{b} B"


def main():
    d = Path(sys.argv[1])
    thr = float(sys.argv[2])
    coll = sys.argv[3]
    runs = {"near": {"jccl": [], "mpi": []}, "far": {"jccl": [], "mpi": []}}
    for line in (d / "probes.txt").read_text().splitlines():
        r, p1, p2, p3 = line.split()
        for lib, probes in (("jccl", (float(p1), float(p2))), ("mpi", (float(p2), float(p3)))):
            f = d / f"{lib}-{r}.json"
            if not f.exists():
                continue
            if max(probes) < thr:
                runs["near"][lib].append(times(f, coll))
            elif min(probes) > thr:
                runs["far"][lib].append(times(f, coll))
    print(f"{coll}, 2 ranks, µs: best [median] of the runs at each placement "
          f"(line round trip under / over {thr:.0f} ns); ratio = Open MPI / jccl of the bests\n")
    for cls in ("near", "far"):
        j, m = runs[cls]["jccl"], runs[cls]["mpi"]
        print(f"#### {cls}: {len(j)} jccl run(s), {len(m)} Open MPI run(s)\n")
        if not j or not m:
            print("(no pair at this placement)\n")
            continue
        print("| size | jccl | Open MPI | ratio |")
        print("| ---: | ---: | ---: | ---: |")
        for b in sorted(set().union(*j) & set().union(*m)):
            jt = [x[b] for x in j if b in x]
            mt = [x[b] for x in m if b in x]
            print(f"| {size(b)} | {min(jt):.2f} [{statistics.median(jt):.2f}] | {min(mt):.2f} [{statistics.median(mt):.2f}] "
                  f"| {min(mt) / min(jt):.2f} |")
        print()


if __name__ == "__main__":
    main()
