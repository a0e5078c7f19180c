#!/usr/bin/python3
"""Merges perf JSON files (jccl perf --json, bench/mpi/mpi_coll --json, bench/gloo/gloo_bench.py
--json; format in bench/README.md) into one markdown table per (ranks, collective):

    size | jccl us | Open MPI us | Gloo us | MPI/jccl | Gloo/jccl

    compare_tables.py [--header FILE] [--dtype float] [--op sum] FILE.json...  > compare.md
    compare_tables.py --best OUT.json FILE.json...


A cell is the out-of-place time, or the in-place time where the library has only the
in-place form (marked "ip"); a ratio > 1 means the reference is slower than jccl. A file
that is missing or unreadable is named on stderr and its column stays empty.
"""
import argparse
import json
import sys

LIBS = [("jccl", "jccl us"), ("mpi", "Open MPI us"), ("gloo", "Gloo us")]


def lib_of(run):
    b = str(run.get("backend", "")).lower()
    if b == "mpi":
        return "mpi"
    if b == "gloo":
        return "gloo"
    return "jccl"  # jccl perf names its engine (host, nccl, ...)


def read_docs(paths):
    """The JSON documents of the files, in order; one that is missing or unreadable is named on stderr."""
    for path in paths:
        try:
            with open(path) as f:
                doc = json.load(f)
        except (OSError, ValueError) as e:
            print(f"compare_tables: skipping {path}: {e}", file=sys.stderr)
            continue
        yield doc


def best_of(paths):
    """One document with each row's best (lowest) time over the files (repeats of one library's runs), or None."""
    best, docs = {}, []
    for doc in read_docs(paths):
        docs.append(doc)
        for run in doc.get("runs", []):
            for row in run.get("rows", []):
                key = (run.get("ranks"), row.get("collective"), row.get("dtype"), row.get("op"), row.get("root"),
                       row.get("bytes"))
                old = best.get(key)
                for mode in ("oop", "ip"):
                    cell = row.get(mode)
                    if cell and old and old[1].get(mode) and old[1][mode]["time_us"] <= cell["time_us"]:
                        row[mode] = old[1][mode]
                best[key] = (run, row)
    if not docs:
        return None
    runs = {}
    for (ranks, coll, *_), (run, row) in best.items():
        r = runs.setdefault((ranks, coll), {k: v for k, v in run.items() if k != "rows"})
        r.setdefault("rows", []).append(row)
    merged = dict(docs[0])
    merged["runs"] = list(runs.values())
    return merged


def load(paths, dtype, op):
    """{(ranks, collective): {bytes: {lib: (time_us, mode)}}} and the labels seen per lib."""
    table, labels = {}, {}
    for doc in read_docs(paths):
        for run in doc.get("runs", []):
            lib = lib_of(run)
            labels.setdefault(lib, set()).add(str(run.get("label", lib)))
            n = int(run.get("ranks", 0))
            for row in run.get("rows", []):
                if row.get("dtype") != dtype or row.get("op") not in (op, "none"):
                    continue
                oop, ip = row.get("oop"), row.get("ip")
                cell = (oop["time_us"], "") if oop else (ip["time_us"], "ip") if ip else None
                if cell is None:
                    continue
                key = (n, row["collective"])
                table.setdefault(key, {}).setdefault(int(row["bytes"]), {})[lib] = cell
    return table, labels


def human(nbytes):
    for unit, div in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if nbytes >= div and nbytes % div == 0:
            return f"{nbytes // div} {unit}"
    return f"{nbytes} B"


def fmt_time(cell):
    if cell is None:
        return "-"
    t, mode = cell
    s = f"{t:.2f}" if t < 100 else f"{t:.0f}"
    return f"{s} ({mode})" if mode else s


def ratio(ref, base):
    if ref is None or base is None or base[0] <= 0:
        return "-"
    return f"{ref[0] / base[0]:.3g}x"


def render(table, labels, order):
    out = []
    if labels:
        out.append("Runs: " + "; ".join(f"{lib}: {', '.join(sorted(v))}" for lib, v in sorted(labels.items())))
        out.append("")
    keys = sorted(table, key=lambda k: (k[0], order.index(k[1]) if k[1] in order else 99, k[1]))
    for n, coll in keys:
        rows = table[(n, coll)]
        out.append(f"### {coll}, {n} ranks")
        out.append("")
        out.append("| size | " + " | ".join(h for _, h in LIBS) + " | MPI/jccl | Gloo/jccl |")
        out.append("|---:|" + "---:|" * (len(LIBS) + 2))
        for nbytes in sorted(rows):
            r = rows[nbytes]
            cells = [fmt_time(r.get(lib)) for lib, _ in LIBS]
            out.append(f"| {human(nbytes)} | " + " | ".join(cells)
                       + f" | {ratio(r.get('mpi'), r.get('jccl'))} | {ratio(r.get('gloo'), r.get('jccl'))} |")
        out.append("")
    return "\n".join(out)


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("files", nargs="+")
    p.add_argument("--header", help="markdown file printed first")
    p.add_argument("--dtype", default="float")
    p.add_argument("--op", default="sum")
    p.add_argument("--best", metavar="OUT", help="write OUT, one JSON with each row's best time over the files, "
                   "instead of the tables")
    a = p.parse_args(argv)
    if a.best:
        merged = best_of(a.files)
        if merged is not None:
            with open(a.best, "w") as f:
                json.dump(merged, f, indent=1)
        return 0
    table, labels = load(a.files, a.dtype, a.op)
    if a.header:
        with open(a.header) as f:
            sys.stdout.write(f.read().rstrip() + "\n\n")
    order = ["allreduce", "allgather", "reducescatter", "broadcast", "reduce", "alltoall",
             "gather", "scatter", "sendrecv"]
    print("Times in microseconds (max over ranks of the per-rank mean, as nccl-tests), out-of-place "
          "unless marked ip (the library has only the in-place form). Ratio = reference time / jccl "
          "time: above 1 means jccl is faster.\n")
    print(render(table, labels, order))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
