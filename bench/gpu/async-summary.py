#!/usr/bin/env python3
"""Tables of host-vs-mpi.sh's phases asynctwocore and asyncab: python3 bench/gpu/async-summary.py DIR (DIR: the
hostcmp directory of a call; the rows are read from the perf and mpi_coll logs)."""
import re, sys, glob, os, statistics, collections
d = sys.argv[1]
def rows(p):
    r = {}
    for line in open(p, errors='replace'):
        f = line.split()
        if len(f) >= 10 and f[0].isdigit() and f[1].isdigit():
            try:
                r[int(f[0])] = (float(f[5]), float(f[9]))
            except ValueError:
                pass
    return r
for n in (2, 4):
    runs = collections.defaultdict(list)
    for tag in ("cli-base", "cli", "z1"):
        for p in sorted(glob.glob(f"{d}/jccl-a2c-{tag}-[0-9]-r{n}.log")):
            runs[tag].append(rows(p))
    for p in sorted(glob.glob(f"{d}/mpi-a2c-[0-9]-default-r{n}.log")):
        runs["mpi"].append(rows(p))
    print(f"== {n} ranks on 2 cores, cold (-n 20 -w 5), all-reduce, us: best of {len(runs['cli'])} runs (each run's better of out of place / in place); median in brackets")
    print(f"{'size':>8} {'async base':>16} {'async new':>16} {'blocking':>16} {'Open MPI':>16} {'MPI/new':>8} {'MPI/base':>8}")
    for s in sorted(runs["cli"][0]):
        def bm(tag):
            v = [min(r[s]) for r in runs[tag] if s in r]
            return min(v), statistics.median(v)
        b, c, z, m = bm("cli-base"), bm("cli"), bm("z1"), bm("mpi")
        print(f"{s:>8} {b[0]:>7.2f} [{b[1]:>6.2f}] {c[0]:>7.2f} [{c[1]:>6.2f}] {z[0]:>7.2f} [{z[1]:>6.2f}] {m[0]:>7.2f} [{m[1]:>6.2f}] {m[0]/c[0]:>8.2f} {m[0]/b[0]:>8.2f}")
for n16 in (16, 4):
    for kind in ("", "cold-"):
        base = [rows(p) for p in sorted(glob.glob(f"{d}/jccl-asyncab-{kind}cli-base-[0-9]-r{n16}.log"))]
        new = [rows(p) for p in sorted(glob.glob(f"{d}/jccl-asyncab-{kind}cli-[0-9]-r{n16}.log"))]
        if not new:
            continue
        z1p = f"{d}/jccl-asyncab-z1-r{n16}.log"
        z1 = rows(z1p) if os.path.exists(z1p) else {}
        print(f"== {n16} ranks on 16 cores, async, {'cold (-n 20 -w 5)' if kind else 'steady (-n 2000 -w 500)'}: us, run 1 / run 2, better of oop/ip")
        print(f"{'size':>8} {'base':>16} {'new':>16} {'blocking steady':>16}")
        for s_ in sorted(new[0]):
            print(f"{s_:>8} {' / '.join(f'{min(r[s_]):.2f}' for r in base):>16} {' / '.join(f'{min(r[s_]):.2f}' for r in new):>16} {min(z1.get(s_,(0,0))):>16.2f}")
