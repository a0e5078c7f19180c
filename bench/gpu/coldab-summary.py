#!/usr/bin/env python3
"""Tables of host-vs-mpi.sh's phases coldab and readme2c: python3 bench/gpu/coldab-summary.py DIR (DIR: the hostcmp directory of a
call). Per build, mode and size: the cold time (each run's better of out of place / in place), best of the runs and
their median; the first calls (each run's slower of out of place / in place), median and largest; the warm-ups'
lengths; Open MPI's cold time in the same rounds."""
import re, sys, glob, statistics, collections
d = sys.argv[1]
def rows(p):
    r = {}
    for line in open(p, errors='replace'):
        f = line.split()
        if len(f) >= 15 and f[0].isdigit() and f[1].isdigit():
            try:
                r[int(f[0])] = (float(f[5]), float(f[9]), float(f[13]), float(f[14]))
            except ValueError:
                pass
        elif len(f) >= 10 and f[0].isdigit() and f[1].isdigit():
            try:
                r[int(f[0])] = (float(f[5]), float(f[9]), float('nan'), float('nan'))
            except ValueError:
                pass
    return r
def warm(p):
    m = re.findall(r'JIT warm-up: \d+ blocks in (\d+) ms', open(p, errors='replace').read())
    return max(int(x) for x in m) if m else None
for tag, n, modes in (("cab2c", 2, ("z1", "z0")), ("cab16", 16, ("z1",)), ("rd2c", 4, ("z0",))):
    mpi = [rows(p) for p in sorted(glob.glob(f"{d}/mpi-{tag}-[0-9]-default-r{n}.log"))]
    for z in modes:
        runs = {b: [rows(p) for p in sorted(glob.glob(f"{d}/jccl-{tag}-{b}-{z}-[0-9]-r{n}.log"))] for b in ("cli-base", "cli")}
        warms = {b: [warm(p) for p in sorted(glob.glob(f"{d}/jccl-{tag}-{b}-{z}-[0-9]-r{n}.log"))] for b in ("cli-base", "cli")}
        if not runs["cli"]:
            continue
        where = {"cab2c": "2 ranks on 2 cores", "rd2c": "README's command: 4 ranks on 2 cores"}.get(tag, f"{n} ranks on the host")
        print(f"== {where}, cold (-n 20 -w 5, -c 1), {'blocking' if z == 'z1' else 'async'}: {len(runs['cli'])} runs per build")
        print(f"   warm-up ms (largest over ranks) base {warms['cli-base']}  new {warms['cli']}")
        print(f"{'size':>9} | {'base best [median]':>19} {'new best [median]':>19} {'MPI best':>9} | {'base/new':>8} {'MPI/new':>8} {'MPI/base':>8} | first call base med/max   new med/max")
        for s in sorted(runs["cli"][0]):
            def t(b):
                v = [min(r[s][0], r[s][1]) for r in runs[b] if s in r]
                return min(v), statistics.median(v)
            def fc(b):
                v = [max(r[s][2], r[s][3]) for r in runs[b] if s in r]
                return statistics.median(v), max(v)
            b, c = t("cli-base"), t("cli")
            m = min(min(r[s]) for r in mpi if s in r) if mpi else float('nan')
            fb, fn = fc("cli-base"), fc("cli")
            print(f"{s:>9} | {b[0]:>8.2f} [{b[1]:>8.2f}] {c[0]:>8.2f} [{c[1]:>8.2f}] {m:>9.2f} | {b[0]/c[0]:>8.2f} {m/c[0]:>8.2f} {m/b[0]:>8.2f} |"
                  f" {fb[0]:>8.1f}/{fb[1]:<8.1f} {fn[0]:>8.1f}/{fn[1]:<8.1f}")
