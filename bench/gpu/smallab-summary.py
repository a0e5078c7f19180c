#!/usr/bin/env python3
"""Table of host-vs-mpi.sh's smallab phase: per collective, ranks and size, each build's best time
(over its runs, out of place and in place) and Open MPI's best (default and cma, out of place), with
the ratio Open MPI / build (> 1: jccl faster).

    python3 bench/gpu/smallab-summary.py DIR BUILD...    (DIR: the hostcmp folder; BUILD: e.g. cli-base cli)
"""
import glob
import json
import os
import re
import sys


def rows(path):
    try:
        d = json.load(open(path))
    except (OSError, ValueError):
        return
    for run in d.get("runs", []):
        for r in run.get("rows", []):
            yield r


def main():
    d, builds = sys.argv[1], sys.argv[2:]
    best = {}  # (who, coll, ranks, bytes) -> us

    def note(key, t):
        if t is not None and t > 0:
            best[key] = min(best.get(key, t), t)

    for f in glob.glob(os.path.join(d, "jccl-small-*.json")):
        m = re.match(r"jccl-small-(\w+)-(.+)-(\d+)-r(\d+)\.json$", os.path.basename(f))
        if not m:
            continue
        coll, build, ranks = m.group(1), m.group(2), int(m.group(4))
        for r in rows(f):
            for side in ("oop", "ip"):
                note((build, coll, ranks, r["bytes"]), (r.get(side) or {}).get("time_us"))
    for f in glob.glob(os.path.join(d, "mpi-small-*.json")):
        m = re.match(r"mpi-small-\w+-r(\d+)\.json$", os.path.basename(f))
        if not m:
            continue
        for r in rows(f):
            note(("mpi", r["collective"], int(m.group(1)), r["bytes"]), (r.get("oop") or {}).get("time_us"))
    keys = sorted({k[1:] for k in best if k[0] != "mpi"})
    print("collective ranks bytes  mpi  " + "  ".join(f"{b} ratio" for b in builds))
    for coll, ranks, size in keys:
        mp = best.get(("mpi", coll, ranks, size))
        cells = []
        for b in builds:
            t = best.get((b, coll, ranks, size))
            ratio = mp / t if (mp and t) else float("nan")
            cells.append(f"{t if t else float('nan'):.2f} {ratio:.2f}")
        print(f"{coll} {ranks} {size} {mp if mp else float('nan'):.2f}  " + "  ".join(cells))


if __name__ == "__main__":
    main()
