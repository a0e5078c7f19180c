#!/usr/bin/python3
"""Markdown tables from the results of bench/gpu/host-vs-mpi.sh (a hostcmp/ directory of perf JSON).

    host_report.py DIR [DIR...]     every table the directories' files allow, to stdout

Times are microseconds of one collective, out of place (the smaller of out of place and in place
where a table says "best"); a ratio > 1 means the reference (Open MPI, Gloo) is slower than jccl.
"Open MPI best" is the fastest of the configurations the run measured (default, cma, han, ...),
named per size.
"""
import glob
import json
import math
import os
import re
import sys


def load(path):
    """{(collective, bytes): row} of a perf JSON file, {} when it is missing."""
    try:
        with open(path) as f:
            doc = json.load(f)
    except (OSError, ValueError):
        return {}
    return {(r["collective"], r["bytes"]): r for run in doc["runs"] for r in run["rows"]}


def t(row, key="oop", field="time_us"):
    m = (row or {}).get(key) or {}
    v = m.get(field)
    return float(v) if v is not None else math.nan


def best(row):
    """The smaller of out of place and in place, either where the other is missing (Gloo's reductions: in place only)."""
    return min((v for v in (t(row, "oop"), t(row, "ip")) if not math.isnan(v)), default=math.nan)


def fmt(v):
    if math.isnan(v):
        return "—"
    return f"{v:.3g}" if v < 1000 else f"{v:.0f}"


def mpi_best(mpi, key):
    """The lowest time of {config: rows} at key (nan when none)."""
    return min((v for v in (t(rows.get(key)) for rows in mpi.values()) if not math.isnan(v)), default=math.nan)


def ratio(ref, mine):
    return "—" if math.isnan(ref) or math.isnan(mine) or mine == 0 else f"{ref / mine:.2f}"


def human(b):
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if b >= size and b % size == 0:
            return f"{b // size} {unit}"
    return f"{b} B"


def configs(d, label, n):
    out = {}
    for path in sorted(glob.glob(os.path.join(d, f"mpi-{label}-*-r{n}.json"))):
        cfg = os.path.basename(path)[len(f"mpi-{label}-"):-len(f"-r{n}.json")]
        if cfg.startswith("default") or cfg in ("cma", "han", "xhc"):
            out[cfg] = load(path)
    return out


def allreduce(d):
    for n in (2, 4, 8, 16):
        cold = load(os.path.join(d, f"jccl-ar-cold-r{n}.json"))
        if not cold:
            continue
        steady = {**load(os.path.join(d, f"jccl-ar-steady-small-r{n}.json")),
                  **load(os.path.join(d, f"jccl-ar-steady-large-r{n}.json"))}
        mpi = configs(d, "ar", n)
        mpi_cold = load(os.path.join(d, f"mpi-ar-cold-default-r{n}.json"))
        gloo = load(os.path.join(d, f"gloo-ar-r{n}.json"))
        print(f"\n#### all-reduce, float sum, {n} ranks\n")
        print("| size | jccl cold | jccl first call | jccl steady | Open MPI cold | Open MPI default | Open MPI best | "
              "MPI default / jccl steady | MPI best / jccl steady | MPI cold / jccl cold | jccl cold / steady"
              + (" | Gloo (in place) | Gloo / jccl steady in place" if gloo else "") + " |")
        print("| ---: " * (11 + (2 if gloo else 0)) + "|")
        for key in sorted(cold, key=lambda k: k[1]):
            b = key[1]
            c, s = t(cold[key]), t(steady.get(key))
            md = t(mpi.get("default", {}).get(key))
            bestcfg, bestv = min(((cfg, t(rows.get(key))) for cfg, rows in mpi.items()),
                                 key=lambda x: (math.isnan(x[1]), x[1]), default=("", math.nan))
            mc = t(mpi_cold.get(key))
            row = [human(b), fmt(c), fmt(t(cold[key], "oop", "first_us")), fmt(s), fmt(mc), fmt(md),
                   f"{fmt(bestv)} ({bestcfg})", ratio(md, s), ratio(bestv, s), ratio(mc, c),
                   "—" if math.isnan(c) or math.isnan(s) else f"{c / s:.2f}"]
            if gloo:
                g = t(gloo.get(key), "ip")
                row += [fmt(g), ratio(g, t(steady.get(key), "ip"))]
            print("| " + " | ".join(row) + " |")


def others(d):
    for n in (2, 4, 8, 16):
        mpi = configs(d, "others", n)
        if not mpi:
            continue
        iters = "?"
        for c in ("allgather", "broadcast"):
            try:
                with open(os.path.join(d, f"jccl-{c}-steady-r{n}.log")) as f:
                    m = re.search(r"warmup iters: (\d+) iters: (\d+)", f.read())
                if m:
                    iters = f"-n {m.group(2)} -w {m.group(1)}"
                    break
            except OSError:
                pass
        print(f"\n#### other collectives, float, {n} ranks (out of place; jccl steady `{iters}`, cold `-n 20 -w 5`)\n")
        print("| collective | size | jccl steady | jccl cold | Open MPI default | Open MPI best | MPI default / jccl | MPI best / jccl |")
        print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
        for c in ("allgather", "reducescatter", "broadcast", "reduce", "alltoall", "gather", "scatter"):
            st = load(os.path.join(d, f"jccl-{c}-steady-r{n}.json"))
            cold = load(os.path.join(d, f"jccl-{c}-cold-r{n}.json"))
            for key in sorted(st, key=lambda k: k[1]):
                s = t(st[key])
                md = t(mpi.get("default", {}).get(key))
                bestcfg, bestv = min(((cfg, t(rows.get(key))) for cfg, rows in mpi.items()),
                                     key=lambda x: (math.isnan(x[1]), x[1]), default=("", math.nan))
                if math.isnan(md) and math.isnan(bestv):
                    continue
                print(f"| {c} | {human(key[1])} | {fmt(s)} | {fmt(t(cold.get(key)))} | {fmt(md)} | {fmt(bestv)} ({bestcfg}) | "
                      f"{ratio(md, s)} | {ratio(bestv, s)} |")


def sendrecv(d):
    for n in (2, 4, 8, 16):
        cold = load(os.path.join(d, f"jccl-sr-cold-r{n}.json"))
        if not cold:
            continue
        cold0 = load(os.path.join(d, f"jccl-sr-cold-z0-r{n}.json"))
        steady = {**load(os.path.join(d, f"jccl-sr-steady-small-r{n}.json")),
                  **load(os.path.join(d, f"jccl-sr-steady-large-r{n}.json"))}
        steady0 = load(os.path.join(d, f"jccl-sr-steady-small-z0-r{n}.json"))
        mpi = configs(d, "sr", n)
        mpi_cold = load(os.path.join(d, f"mpi-sr-cold-default-r{n}.json"))
        print(f"\n#### send/recv ring step, {n} ranks (out of place; blocking: sendRecv / MPI_Sendrecv)\n")
        print("| size | jccl cold | jccl cold async | jccl steady | jccl steady async | Open MPI cold | Open MPI default | "
              "Open MPI best | MPI best / jccl steady | MPI cold / jccl cold | jccl cold / steady |")
        print("| ---: " * 11 + "|")
        for key in sorted(cold, key=lambda k: k[1]):
            c, s = t(cold[key]), t(steady.get(key))
            md = t(mpi.get("default", {}).get(key))
            bestcfg, bestv = min(((cfg, t(rows.get(key))) for cfg, rows in mpi.items()),
                                 key=lambda x: (math.isnan(x[1]), x[1]), default=("", math.nan))
            mc = t(mpi_cold.get(key))
            print("| " + " | ".join([human(key[1]), fmt(c), fmt(t(cold0.get(key))), fmt(s), fmt(t(steady0.get(key))), fmt(mc),
                                     fmt(md), f"{fmt(bestv)} ({bestcfg})", ratio(bestv, s), ratio(mc, c),
                                     "—" if math.isnan(c) or math.isnan(s) else f"{c / s:.2f}"]) + " |")
    twocore(d, "twocore-sr", "send/recv, ")


def srab(d):
    """host-vs-mpi.sh phase srab: send/recv steps, two builds interleaved three times, and Open MPI."""
    for n in (2, 4, 8, 16):
        runs = {v: [load(os.path.join(d, f"jccl-srab-{v}-{rep}-r{n}.json")) for rep in (1, 2, 3)]
                for v in ("cli-base", "cli")}
        if not any(runs["cli"]):
            continue
        mpi = {cfg: load(os.path.join(d, f"mpi-srab-{cfg}-r{n}.json")) for cfg in ("default", "cma")}
        print(f"\n#### send/recv steps, {n} ranks: cli-base against cli, three runs each interleaved "
              "(lowest and highest; best of out-of-place and in-place), and Open MPI\n")
        print("| size | cli-base | cli | cli-base / cli (lowest) | Open MPI default | Open MPI cma | "
              "MPI best / cli (lowest) |")
        print("| ---: " * 7 + "|")
        keys = sorted({k for r in runs["cli"] for k in r}, key=lambda k: k[1])
        for key in keys:
            span = {}
            for v, rs in runs.items():
                vals = [best(r.get(key)) for r in rs if r.get(key)]
                span[v] = (min(vals), max(vals)) if vals else (math.nan, math.nan)
            m = {cfg: t(rows.get(key)) for cfg, rows in mpi.items()}
            mbest = mpi_best(mpi, key)
            print("| " + " | ".join([human(key[1]),
                                     f"{fmt(span['cli-base'][0])}-{fmt(span['cli-base'][1])}",
                                     f"{fmt(span['cli'][0])}-{fmt(span['cli'][1])}",
                                     ratio(span['cli-base'][0], span['cli'][0]),
                                     fmt(m["default"]), fmt(m["cma"]), ratio(mbest, span['cli'][0])]) + " |")


def srsc(d):
    """host-vs-mpi.sh phase srsc: send/recv by one copy against JCCL_SHM_SINGLE_COPY_BYTES=off, and Open MPI."""
    for n in (2, 4, 8, 16):
        runs = {v: [load(os.path.join(d, f"jccl-srsc-{v}-{rep}-r{n}.json")) for rep in (1, 2)] for v in ("on", "off")}
        if not any(runs["on"]):
            continue
        mpi = {cfg: load(os.path.join(d, f"mpi-srsc-{cfg}-r{n}.json")) for cfg in ("default", "cma")}
        print(f"\n#### send/recv steps, {n} ranks: single copy against the mailboxes (JCCL_SHM_SINGLE_COPY_BYTES=off), "
              "best of two runs each interleaved (best of out-of-place and in-place), and Open MPI\n")
        print("| size | single copy | mailboxes | mailboxes / single copy | Open MPI default | Open MPI cma | "
              "MPI best / single copy |")
        print("| ---: " * 7 + "|")
        keys = sorted({k for r in runs["on"] for k in r}, key=lambda k: k[1])
        for key in keys:
            b = {v: min((best(r.get(key)) for r in rs if r.get(key)), default=math.nan) for v, rs in runs.items()}
            m = {cfg: t(rows.get(key)) for cfg, rows in mpi.items()}
            mbest = mpi_best(mpi, key)
            print("| " + " | ".join([human(key[1]), fmt(b["on"]), fmt(b["off"]), ratio(b["off"], b["on"]),
                                     fmt(m["default"]), fmt(m["cma"]), ratio(mbest, b["on"])]) + " |")


def cmacoll(d):
    """host-vs-mpi.sh phase cmacoll: collectives reading peers' native send buffers against the slots, and Open MPI."""
    for n in (2, 4, 8, 16):
        colls = [c for c in ("allgather", "gather", "broadcast", "alltoall", "scatter")
                 if load(os.path.join(d, f"jccl-cma-{c}-on-r{n}.json"))]
        if not colls:
            continue
        print(f"\n#### {n} ranks: peers' native send buffers read in place against the slots "
              "(JCCL_SHM_SINGLE_COPY_BYTES=off), and Open MPI (best of out-of-place and in-place; µs)\n")
        print("| collective | size | read in place | slots | slots / in place | Open MPI default | Open MPI cma | "
              "MPI best / jccl |")
        print("| --- | ---: " + "| ---: " * 6 + "|")
        for c in colls:
            on = load(os.path.join(d, f"jccl-cma-{c}-on-r{n}.json"))
            off = load(os.path.join(d, f"jccl-cma-{c}-off-r{n}.json"))
            mpi = {cfg: load(os.path.join(d, f"mpi-cma-{c}-{cfg}-r{n}.json")) for cfg in ("default", "cma")}
            for key in sorted(on, key=lambda k: k[1]):
                a, b = best(on.get(key)), best(off.get(key))
                m = {cfg: t(rows.get(key)) for cfg, rows in mpi.items()}
                mbest = mpi_best(mpi, key)
                print("| " + " | ".join([c, human(key[1]), fmt(a), fmt(b), ratio(b, a), fmt(m["default"]), fmt(m["cma"]),
                                         ratio(mbest, a)]) + " |")


def registered(d, ref_dirs):
    for n in (8, 16):
        plain = load(os.path.join(d, f"jccl-reg-plain-r{n}.json"))
        if not plain:
            continue
        mpi = {}
        for r in ref_dirs:
            mpi = mpi or configs(r, "ar", n)
        print(f"\n#### registered buffers, {n} ranks (out of place, `-n 40 -w 10`)\n")
        print("| collective | size | jccl plain | jccl registered | registered speed-up | Open MPI best (all-reduce) | "
              "MPI best / jccl registered | busbw registered (GB/s) |")
        print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
        for c in ("", "-allgather", "-broadcast", "-reducescatter"):
            p = load(os.path.join(d, f"jccl-reg-plain{c}-r{n}.json"))
            g = load(os.path.join(d, f"jccl-reg-registered{c}-r{n}.json"))
            for key in sorted(p, key=lambda k: k[1]):
                a, b = t(p[key]), t(g.get(key))
                if c == "":
                    bestcfg, bestv = min(((cfg, t(rows.get(key))) for cfg, rows in mpi.items()),
                                         key=lambda x: (math.isnan(x[1]), x[1]), default=("", math.nan))
                    mref, mr = f"{fmt(bestv)} ({bestcfg})", ratio(bestv, b)
                else:
                    mref, mr = "—", "—"
                print(f"| {c[1:] or 'allreduce'} | {human(key[1])} | {fmt(a)} | {fmt(b)} | {ratio(a, b)} | {mref} | {mr} | "
                      f"{fmt(t(g.get(key), 'oop', 'busbw'))} |")


def twocore(d, label="twocore", what=""):
    """2 ranks on 2 cores, cold: the runs of jccl-LABEL-cold* against mpi-LABEL-cold*-default."""
    runs = sorted(glob.glob(os.path.join(d, f"jccl-{label}-cold*-r2.json")))
    if not runs:
        return
    j = [load(p) for p in runs]
    m = [load(p) for p in sorted(glob.glob(os.path.join(d, f"mpi-{label}-cold*-default-r2.json")))]
    print(f"\n#### {what}2 ranks on 2 cores, cold (`-n 20 -w 5`), best of {len(j)} runs\n")
    print("| size | jccl best | jccl worst | Open MPI best | Open MPI worst | MPI best / jccl best |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: |")
    for key in sorted(j[0], key=lambda k: k[1]):
        jb = [best(x.get(key)) for x in j]
        mb = [best(x.get(key)) for x in m]
        print(f"| {human(key[1])} | {fmt(min(jb))} | {fmt(max(jb))} | {fmt(min(mb))} | {fmt(max(mb))} | {ratio(min(mb), min(jb))} |")


def variants(d):
    names = [v for v in ("base", "new", "nowarm", "nopin", "neither")
             if glob.glob(os.path.join(d, f"jccl-var-{v}-*-r2.json"))]
    if not names:
        return
    for n in (2, 8):
        data = {v: [load(p) for p in sorted(glob.glob(os.path.join(d, f"jccl-var-{v}-*-r{n}.json")))] for v in names}
        if not data[names[0]]:
            continue
        print(f"\n#### builds and switches, all-reduce, {n} ranks, steady (`-n 500 -w 100`), best of out/in place x runs\n")
        print("| size | " + " | ".join(names) + " | " + " | ".join(f"{v} / base" for v in names if v != "base") + " |")
        print("| ---: " * (1 + 2 * len(names) - 1) + "|")
        for key in sorted(data[names[0]][0], key=lambda k: k[1]):
            b = {v: min(best(x.get(key)) for x in data[v]) for v in names}
            print(f"| {human(key[1])} | " + " | ".join(fmt(b[v]) for v in names) + " | "
                  + " | ".join("—" if math.isnan(b[v]) else f"{b[v] / b['base']:.2f}" for v in names if v != "base") + " |")


def main(argv):
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0 if argv else 2
    for d in argv:
        print(f"\n<!-- {d} -->")
        allreduce(d)
        others(d)
        sendrecv(d)
        srab(d)
        srsc(d)
        cmacoll(d)
        registered(d, argv)
        twocore(d)
        variants(d)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
