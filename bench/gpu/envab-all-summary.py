#!/usr/bin/python3
"""Tables of host-vs-mpi.sh's envab phase run with HOSTCMP_ENVAB_COLLS=all (jccl perf all).

    envab-all-summary.py [--label L] DIR TAG [TAG...]    DIR: the phase's files; TAGs: the settings' tags, the
                                                        first the base; L: the files' label (default all:
                                                        jccl-envab-L-TAG-RUN-rN.json)

Per collective, rank count and size: each setting's out-of-place times over its runs (best first),
the base's best over each setting's best (> 1: the setting faster), and Open MPI's best
(default, cma) out of place, with Open MPI / the best setting.
"""
import glob
import math
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from host_report import load, t, fmt, human  # noqa: E402


def main(d, tags, label="all"):
    files = glob.glob(os.path.join(d, f"jccl-envab-{label}-*-r*.json"))
    ranks = sorted({int(re.search(r"-r(\d+)\.json$", f).group(1)) for f in files})
    for n in ranks:
        runs = {tag: [load(f) for f in sorted(glob.glob(os.path.join(d, f"jccl-envab-{label}-{tag}-*-r{n}.json")))]
                for tag in tags}
        mpi = [load(f) for f in glob.glob(os.path.join(d, f"mpi-envab*-r{n}.json"))]
        keys = sorted({k for rs in runs.values() for r in rs for k in r}, key=lambda k: (k[0], k[1]))
        print(f"\n#### {n} ranks, out of place, us: runs of " + ", ".join(tags) + f"; {tags[0]} best / each best\n")
        print("| collective | size | " + " | ".join(tags) + " | " + " | ".join(f"{tags[0]} / {x}" for x in tags[1:])
              + " | Open MPI | MPI / best |")
        print("| --- | ---: " + "| --- " * len(tags) + "| ---: " * (len(tags) - 1) + "| ---: | ---: |")
        for k in keys:
            vals = {tag: sorted(v for v in (t(r.get(k)) for r in runs[tag]) if not math.isnan(v)) for tag in tags}
            bests = {tag: (v[0] if v else math.nan) for tag, v in vals.items()}
            m = min((v for v in (t(r.get(k)) for r in mpi) if not math.isnan(v)), default=math.nan)
            bb = min((v for v in bests.values() if not math.isnan(v)), default=math.nan)
            cells = [", ".join(fmt(x) for x in vals[tag]) or "—" for tag in tags]
            rat = [f"{bests[tags[0]] / bests[x]:.2f}" if bests[x] and not math.isnan(bests[x]) else "—" for x in tags[1:]]
            print(f"| {k[0]} | {human(k[1])} | " + " | ".join(cells) + " | " + " | ".join(rat)
                  + f" | {fmt(m)} | {m / bb:.2f} |")


if __name__ == "__main__":
    args = sys.argv[1:]
    lab = "all"
    if args[:1] == ["--label"]:
        lab, args = args[1], args[2:]
    main(args[0], args[1:], lab)
