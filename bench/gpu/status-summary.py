#!/usr/bin/python3
"""Tables of host-vs-mpi.sh's `status` phase: every collective against Open MPI and Gloo.

    status-summary.py DIR     DIR holds the phase's files (jccl-status-*.json, mpi-status-*.json, ...)

Steady: jccl's time is the best over the passes of the smaller of out of place and in place; Open
MPI's the best over its configurations of the same. Cold: the first pass's out-of-place time, each
side's own cold run (-n 20 -w 5). Each cell: jccl / reference (reference / jccl; > 1: jccl faster).
"""
import glob
import math
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from host_report import best, load, t, fmt, human  # noqa: E402

COLLS = ["allreduce", "allgather", "reducescatter", "broadcast", "reduce", "alltoall", "gather", "scatter",
         "sendrecv"]


def cell(mine, ref, tag=""):
    if math.isnan(mine) or math.isnan(ref):
        return "—"
    return f"{fmt(mine)} / {fmt(ref)}{tag} ({ref / mine:.2f})"


def tables(ranks, rows, title, cellfn):
    """One table per collective: a row per size of {rank count: {(collective, bytes): ...}}, cellfn(key, n) each cell."""
    print(title + "\n")
    for c in COLLS:
        keys = sorted({k for n in ranks for k in rows[n] if k[0] == c}, key=lambda k: k[1])
        if not keys:
            continue
        print(f"\n{c}\n")
        print("| size | " + " | ".join(f"{n} ranks" for n in ranks) + " |")
        print("| ---: " + "| --- " * len(ranks) + "|")
        for k in keys:
            print(f"| {human(k[1])} | " + " | ".join(cellfn(k, n) for n in ranks) + " |")


def main(d):
    ranks = sorted({int(m.group(1)) for f in glob.glob(os.path.join(d, "jccl-status-steady-*-r*.json"))
                    for m in [re.search(r"-r(\d+)\.json$", f)] if m})
    steady, mpi, cold, mpicold, gloo = {}, {}, {}, {}, {}
    for n in ranks:
        runs = [load(f) for f in sorted(glob.glob(os.path.join(d, f"jccl-status-steady-*-r{n}.json")))]
        steady[n] = {}
        for r in runs:
            for k, row in r.items():
                steady[n].setdefault(k, []).append(best(row))
        mpi[n] = {}
        for f in glob.glob(os.path.join(d, f"mpi-status-*-r{n}.json")):
            cfg = os.path.basename(f)[len("mpi-status-"):-len(f"-r{n}.json")]
            if cfg.startswith("cold"):
                continue
            for k, row in load(f).items():
                v = best(row)
                if not math.isnan(v) and (k not in mpi[n] or v < mpi[n][k][0]):
                    mpi[n][k] = (v, cfg)
        cold[n] = load(os.path.join(d, f"jccl-status-cold-r{n}.json"))
        mpicold[n] = load(os.path.join(d, f"mpi-status-cold-default-r{n}.json"))
        gloo[n] = load(os.path.join(d, f"gloo-status-r{n}.json"))
    below = []

    def steady_cell(k, n):
        vs = steady[n].get(k, [])
        mine = min(vs) if vs else math.nan
        ref, cfg = mpi[n].get(k, (math.nan, ""))
        if not math.isnan(mine) and not math.isnan(ref) and ref / mine < 1:
            below.append((k[0], n, k[1], ref / mine))
        return cell(mine, ref, "" if cfg in ("default", "") else f" {cfg}")

    tables(ranks, steady, "#### steady, us: jccl / Open MPI best (Open MPI / jccl)", steady_cell)
    tables(ranks, cold, "#### cold (-n 20 -w 5, perf all's order), out of place, us: jccl / Open MPI default "
           "(Open MPI / jccl)", lambda k, n: cell(t(cold[n].get(k)), t(mpicold[n].get(k))))
    gr = [n for n in ranks if gloo[n]]
    if gr:
        print("\n#### Gloo, steady, us: jccl / Gloo (Gloo / jccl), the best of out of place and in place each\n")
        print("| collective | size | " + " | ".join(f"{n} ranks" for n in gr) + " |")
        print("| --- | ---: " + "| --- " * len(gr) + "|")
        for c in COLLS:
            for k in sorted({k for n in gr for k in gloo[n] if k[0] == c}, key=lambda k: k[1]):
                cells = []
                for n in gr:
                    vs = steady[n].get(k, [])
                    cells.append(cell(min(vs) if vs else math.nan, best(gloo[n].get(k))))
                print(f"| {c} | {human(k[1])} | " + " | ".join(cells) + " |")
    print("\n#### steady cells below Open MPI (ratio < 1)\n")
    for c, n, b, r in sorted(below, key=lambda x: x[3]):
        print(f"- {c} {n} ranks {human(b)}: {r:.2f}")
    total = sum(1 for n in ranks for k in steady[n] if k in mpi[n])
    print(f"\n{len(below)} of {total} steady cells below Open MPI's best")


if __name__ == "__main__":
    main(sys.argv[1])
