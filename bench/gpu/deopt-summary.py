#!/usr/bin/python3
"""The library's compiled code thrown away after the JIT warm-up, from a jccl perf log.

    deopt-summary.py LOG [LOG...]

LOG: the output of `jccl perf --ranks N` run with -Xlog:deoptimization=debug and JCCL_DEBUG=INFO
(as bench/results/*-deopt16/deopt16.sh does): every org.jccl deoptimization of C2 code after its
rank's warm-up ended (the warm-up's INFO line), counted by method, bytecode and reason, with how many
ranks had it. `jccl perf`'s own classes are left out.
"""
import re
import sys


def summary(path):
    lines = open(path, errors="replace").read().splitlines()
    end = {}
    for line in lines:
        m = re.match(r"(\[\d+\]) .*JIT warm-up: .* ending (\d+) ms after", line)
        if m:
            end[m.group(1)] = int(m.group(2)) / 1000
    seen = {}
    for line in lines:
        m = re.match(r"(\[\d+\] )?\[([\d.]+)s\]\[debug\]\[deoptimization\] .*level=4 (org\.jccl\.\S+?)\("
                     r".*trap_bci=(\d+) (?:osr_bci=\d+ )?(\S+)", line)
        if not m:
            continue
        rank = m.group(1).strip() if m.group(1) else "[0]"
        if float(m.group(2)) <= end.get(rank, 0) or ".cli." in m.group(3):
            continue
        seen.setdefault((m.group(3), m.group(4), m.group(5)), []).append(rank)
    print(f"\n#### {path}: warm-up ended on {len(end)} ranks\n")
    print("| method | bci | reason | deoptimizations | ranks |")
    print("| --- | ---: | --- | ---: | ---: |")
    for (method, bci, reason), ranks in sorted(seen.items(), key=lambda kv: -len(kv[1])):
        print(f"| {method} | {bci} | {reason} | {len(ranks)} | {len(set(ranks))} |")


if __name__ == "__main__":
    for p in sys.argv[1:]:
        summary(p)
