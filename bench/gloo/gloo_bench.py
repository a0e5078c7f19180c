#!/usr/bin/python3
"""Times torch.distributed's gloo backend on CPU tensors the way nccl-tests times NCCL.

    /usr/bin/python3 bench/gloo/gloo_bench.py allreduce,allgather --ranks 2 -b 8 -e 64M -f 2 --json gloo.json

It starts --ranks processes itself (torch.multiprocessing, MASTER_ADDR=127.0.0.1 on a free
port) and prints the same table and writes the same JSON rows as bench/mpi/mpi_coll and
`jccl perf --json` (see bench/README.md). Sizes, algbw and busbw follow nccl-tests; the time
of a size is the maximum over ranks of each rank's mean time per iteration, timed over
back-to-back operations without a barrier inside the loop (one barrier before it).

Gloo has no out-of-place form of some collectives (all_reduce, reduce work in place) and no
in-place form of others (all_to_all_single, send/recv need two tensors): those columns are
"N/A" in the table and null in the JSON. Collectives the installed torch's gloo does not
implement (reduce_scatter before torch 2.x) are reported as skipped, never emulated.
"""
import argparse
import datetime
import os
import platform
import socket
import sys
import time

COLLS = ["allreduce", "allgather", "reducescatter", "broadcast", "reduce", "alltoall",
         "gather", "scatter", "sendrecv"]
TYPES = ["int8", "uint8", "int32", "int64", "half", "float", "double"]
OPS = ["sum", "prod", "min", "max"]
PER_RANK = {"allgather", "reducescatter", "alltoall", "gather", "scatter"}
ROOTED = {"broadcast", "reduce", "gather", "scatter"}
REDUCING = {"allreduce", "reduce", "reducescatter"}


def parse_size(flag, text):
    mul = {"K": 1024, "M": 1024 ** 2, "G": 1024 ** 3}
    t = text.strip()
    try:
        if t and t[-1].upper() in mul:
            return int(float(t[:-1]) * mul[t[-1].upper()])
        return int(float(t))
    except ValueError:
        raise SystemExit(f"gloo_bench: {flag}: '{text}' is not a size; use bytes with an optional K, M or G suffix")


def parse_args(argv):
    p = argparse.ArgumentParser(description="torch.distributed gloo collectives, timed like nccl-tests")
    p.add_argument("colls", nargs="?", default="allreduce",
                   help="collective, comma-separated list, or all: " + " ".join(COLLS))
    p.add_argument("--ranks", "-N", type=int, default=2, help="processes to start (default 2)")
    p.add_argument("-b", default="8", help="minimum size in bytes (K/M/G suffixes)")
    p.add_argument("-e", default="64M", help="maximum size in bytes")
    p.add_argument("-f", type=float, default=2.0, help="size factor")
    p.add_argument("-i", default="0", help="size increment (instead of -f)")
    p.add_argument("-n", type=int, default=0, help="timed iterations (0 = adaptive to -T)")
    p.add_argument("-w", type=int, default=5, help="warm-up iterations (capped by -T/4)")
    p.add_argument("-T", type=float, default=0.2, help="seconds of timed loop per size when adaptive")
    p.add_argument("-d", default="float", help="data type: " + " ".join(TYPES))
    p.add_argument("-o", default="sum", help="reduction: " + " ".join(OPS))
    p.add_argument("-r", type=int, default=0, help="root rank")
    p.add_argument("-c", type=int, default=1, choices=[0, 1], help="check results (0/1)")
    p.add_argument("--threads", type=int, default=1,
                   help="torch intra-op threads per rank (default 1: one core per rank)")
    p.add_argument("--timeout", type=float, default=300, help="seconds any collective may take")
    p.add_argument("--json", help="write the JSON rows here")
    p.add_argument("--label", help="run label (default: Gloo (torch VERSION))")
    p.add_argument("--machine", help="machine description (default: CPU model, cores, host)")
    a = p.parse_args(argv)
    a.colls = COLLS if a.colls == "all" else a.colls.split(",")
    for c in a.colls:
        if c not in COLLS:
            p.error(f"collective: unknown '{c}'; use one of {' '.join(COLLS)} or all")
    if a.d not in TYPES:
        p.error(f"-d: unknown data type '{a.d}'; use one of {' '.join(TYPES)}")
    if a.o not in OPS:
        p.error(f"-o: unknown reduction '{a.o}'; use one of {' '.join(OPS)}")
    a.b, a.e, a.i = parse_size("-b", a.b), parse_size("-e", a.e), parse_size("-i", a.i)
    if a.ranks < 1:
        p.error("--ranks: must be >= 1")
    if a.b < 1 or a.e < a.b:
        p.error("-b/-e: need 1 <= -b <= -e")
    if not a.f > 1 and a.i == 0:
        p.error("-f: the factor must be > 1 (or give -i)")
    if not 0 <= a.r < a.ranks:
        p.error(f"-r: root {a.r} is not a rank of a job of {a.ranks} ranks")
    if not 0 < a.T <= 60:
        p.error("-T: seconds per size must be in (0, 60]")
    return a


def default_machine():
    model = platform.processor() or "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return f"{model}, {os.cpu_count()} cores ({socket.gethostname()})"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def sizes(a):
    s = a.b
    while s <= a.e:
        yield s
        nxt = s + a.i if a.i else int(s * a.f)
        if nxt <= s:
            break
        s = nxt


def elems(coll, c, n):
    """Elements (read from the send buffer, written to the receive buffer) for count c."""
    if coll in ("allgather", "gather"):
        return c, c * n
    if coll in ("reducescatter", "scatter"):
        return c * n, c
    if coll == "alltoall":
        return c * n, c * n
    return c, c


def shape(coll, nbytes, ts, n):
    """nccl-tests' byte counts for a size: (count column, size column in bytes)."""
    c = nbytes // ts // n if coll in PER_RANK else nbytes // ts
    return c, max(elems(coll, c, n)) * ts


def bus_factor(coll, n):
    if coll == "allreduce":
        return 2.0 * (n - 1) / n
    if coll in PER_RANK:
        return (n - 1) / n
    return 1.0


class Bench:
    """One rank's view: buffers, the operation of each (collective, mode), timing, check."""

    def __init__(self, a, rank, n):
        import torch
        import torch.distributed as dist
        self.torch, self.dist, self.a, self.rank, self.n = torch, dist, a, rank, n
        self.dtype = {"int8": torch.int8, "uint8": torch.uint8, "int32": torch.int32,
                      "int64": torch.int64, "half": torch.float16, "float": torch.float32,
                      "double": torch.float64}[a.d]
        self.ts = torch.empty(0, dtype=self.dtype).element_size()
        self.rop = {"sum": dist.ReduceOp.SUM, "prod": dist.ReduceOp.PRODUCT,
                    "min": dist.ReduceOp.MIN, "max": dist.ReduceOp.MAX}[a.o]
        cap = a.e // self.ts + n
        # Touched (zeroed) once, so page faults are not timed.
        self.sendb = torch.zeros(cap, dtype=self.dtype)
        self.recvb = torch.zeros(cap, dtype=self.dtype)

    # ---- the operations: a zero-argument callable per (collective, in place), or None ----
    def op(self, coll, c, inplace):
        d, me, n, root, rop = self.dist, self.rank, self.n, self.a.r, self.rop
        s, r = self.sendb, self.recvb
        blocks = [r[k * c:(k + 1) * c] for k in range(n)]
        if coll == "allreduce":
            t = r[:c]
            return (lambda: d.all_reduce(t, op=rop)) if inplace else None
        if coll == "allgather":
            src = blocks[me] if inplace else s[:c]
            return lambda: d.all_gather(blocks, src)
        if coll == "reducescatter":
            if inplace:
                return None
            ins = [s[k * c:(k + 1) * c] for k in range(n)]
            out = r[:c]
            return lambda: d.reduce_scatter(out, ins, op=rop)
        if coll == "broadcast":
            # One tensor, as in MPI: out of place the root sends from its send buffer.
            t = s[:c] if (not inplace and me == root) else r[:c]
            return lambda: d.broadcast(t, src=root)
        if coll == "reduce":
            t = r[:c]
            return (lambda: d.reduce(t, dst=root, op=rop)) if inplace else None
        if coll == "alltoall":
            if inplace:
                return None
            out, src = r[:c * n], s[:c * n]
            return lambda: d.all_to_all_single(out, src)
        if coll == "gather":
            src = blocks[me] if inplace else s[:c]
            lst = blocks if me == root else None
            return lambda: d.gather(src, gather_list=lst, dst=root)
        if coll == "scatter":
            out = blocks[me] if inplace else r[:c]
            lst = None
            if me == root:
                lst = blocks if inplace else [s[k * c:(k + 1) * c] for k in range(n)]
            return lambda: d.scatter(out, scatter_list=lst, src=root)
        if coll == "sendrecv":
            if inplace:
                return None
            src, out = s[:c], r[:c]
            nxt, prv = (me + 1) % n, (me + n - 1) % n

            def sendrecv():
                reqs = [d.isend(src, nxt), d.irecv(out, prv)]
                for q in reqs:
                    q.wait()
            return sendrecv
        raise AssertionError(coll)

    def max_over_ranks(self, v):
        t = self.torch.tensor([v], dtype=self.torch.float64)
        self.dist.all_reduce(t, op=self.dist.ReduceOp.MAX)
        return float(t[0])

    def timed(self, fn, iters):
        self.dist.barrier()
        t0 = time.perf_counter()
        for _ in range(iters):
            fn()
        return self.max_over_ranks((time.perf_counter() - t0) / iters)

    def measure(self, coll, c, inplace):
        """(time_us, algbw, busbw, wrong) or None when gloo has no such form."""
        fn = self.op(coll, c, inplace)
        if fn is None:
            return None
        a = self.a
        est = self.timed(fn, 1)  # cold; sizes the warm-up and the loop
        warm = a.w
        if warm > 0 and est * warm > a.T / 4:
            # at least one: the cold operation may include set-up and under-size the loop
            warm = max(1, int(a.T / 4 / est))
        if warm > 0:
            est = self.timed(fn, warm)
        iters = a.n or min(50000, max(3, int(a.T / max(est, 1e-9))))
        sec = self.timed(fn, iters)
        base = c * self.ts * (self.n if coll in PER_RANK else 1)
        algbw = base / 1e9 / sec if sec > 0 else 0.0
        wrong = self.check(coll, c, inplace) if a.c else None
        return sec * 1e6, algbw, algbw * bus_factor(coll, self.n), wrong

    # ---- check: integer-valued inputs whose exact result is computed independently ----
    def values(self, r, idx):
        return (r + idx) % 2 + 1 if self.a.o == "prod" else (r + idx) % 3 + 1

    def reduced(self, idx):
        t = self.torch
        vals = t.stack([self.values(r, idx) for r in range(self.n)])  # int64, exact
        red = {"sum": lambda v: v.sum(0), "prod": lambda v: v.prod(0),
               "min": lambda v: v.min(0).values, "max": lambda v: v.max(0).values}[self.a.o]
        return red(vals)

    def check(self, coll, c, inplace):
        t, me, n, root = self.torch, self.rank, self.n, self.a.r
        snd, rcv = elems(coll, c, n)
        self.recvb[:max(snd, rcv)].zero_()  # poison: no expected value is 0
        src = self.recvb if inplace else self.sendb
        off = me * c if inplace and coll in ("allgather", "gather") else 0
        feeds = not ((coll == "broadcast" or coll == "scatter") and me != root)
        if feeds:
            src[off:off + snd] = self.values(me, t.arange(snd)).to(self.dtype)
        fn = self.op(coll, c, inplace)
        self.dist.barrier()
        fn()
        idx = t.arange(c)
        r = self.recvb
        if coll == "allreduce":
            got, want = r[:c], self.reduced(idx)
        elif coll == "reduce":
            got, want = (r[:c], self.reduced(idx)) if me == root else (None, None)
        elif coll == "reducescatter":
            got, want = r[:c], self.reduced(me * c + idx)
        elif coll in ("allgather", "gather"):
            if coll == "gather" and me != root:
                got, want = None, None
            else:
                got, want = r[:c * n], t.cat([self.values(k, idx) for k in range(n)])
        elif coll == "broadcast":
            got, want = (None, None) if (me == root and not inplace) else (r[:c], self.values(root, idx))
        elif coll == "scatter":
            o = me * c if inplace else 0
            got, want = r[o:o + c], self.values(root, me * c + idx)
        elif coll == "alltoall":
            got, want = r[:c * n], t.cat([self.values(k, me * c + idx) for k in range(n)])
        elif coll == "sendrecv":
            got, want = r[:c], self.values((me + n - 1) % n, idx)
        wrong = 0 if got is None else int((got != want.to(self.dtype)).sum())
        w = t.tensor([wrong], dtype=t.int64)
        self.dist.all_reduce(w)
        return int(w[0])

    def supported(self, coll):
        """Probes once: the installed gloo may lack a collective (reduce_scatter in torch 1.x)."""
        try:
            fn = self.op(coll, 1, False) or self.op(coll, 1, True)
            fn()
            ok = 1
        except RuntimeError as e:
            if self.rank == 0:
                print(f"# {coll}: skipped, the gloo backend of this torch does not implement it ({str(e).splitlines()[0]})",
                      flush=True)
            ok = 0
        t = self.torch.tensor([ok], dtype=self.torch.int64)
        self.dist.all_reduce(t, op=self.dist.ReduceOp.MIN)
        return bool(t[0])


def fmt_mode(m):
    if m is None:
        return f"{'N/A':>7}  {'N/A':>7}  {'N/A':>7}  {'N/A':>6}"
    w = "N/A" if m[3] is None else str(m[3])
    return f"{m[0]:7.2f}  {m[1]:7.3f}  {m[2]:7.3f}  {w:>6}"


def json_mode(m):
    if m is None:
        return "null"
    w = "null" if m[3] is None else str(m[3])
    return f'{{"time_us":{m[0]:.3f},"algbw":{m[1]:.6f},"busbw":{m[2]:.6f},"wrong":{w}}}'


def worker(rank, a, port, result_q):
    import torch
    import torch.distributed as dist
    torch.set_num_threads(a.threads)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=a.ranks, timeout=datetime.timedelta(seconds=a.timeout))
    b = Bench(a, rank, a.ranks)
    n = a.ranks
    rows, total_wrong, bw = [], 0, []
    label = a.label or f"Gloo (torch {torch.__version__})"
    machine = a.machine or default_machine()
    if rank == 0:
        print(f"# gloo_bench: torch {torch.__version__} gloo, {n} ranks, {machine}")
        print(f"# iterations: {'fixed' if a.n else 'adaptive'}, warm-up {a.w}, check {a.c}, "
              f"{a.threads} torch thread(s) per rank; time = max over ranks of the per-rank mean", flush=True)
    for coll in a.colls:
        if not b.supported(coll):
            continue
        if rank == 0:
            print(f"#\n# {coll}\n"
                  "#                                                        out-of-place                        in-place\n"
                  "#       size         count      type   redop    root     time    algbw    busbw  #wrong     time    algbw    busbw  #wrong\n"
                  "#        (B)    (elements)                               (us)   (GB/s)   (GB/s)              (us)   (GB/s)   (GB/s)",
                  flush=True)
        for nbytes in sizes(a):
            c, size = shape(coll, nbytes, b.ts, n)
            if c == 0:
                continue
            oop, ip = b.measure(coll, c, False), b.measure(coll, c, True)
            for m in (oop, ip):
                if m is not None:
                    total_wrong += m[3] or 0
                    bw.append(m[2])
            if rank == 0:
                opn = a.o if coll in REDUCING else "none"
                root = a.r if coll in ROOTED else -1
                print(f"{size:12d}  {c:12d}  {a.d:>8}  {opn:>6}  {root:6d}  {fmt_mode(oop)}  {fmt_mode(ip)}", flush=True)
                rows.append(f'{{"collective":"{coll}","dtype":"{a.d}","op":"{opn}","root":{root},'
                            f'"bytes":{size},"count":{c},"oop":{json_mode(oop)},"ip":{json_mode(ip)}}}')
    if rank == 0:
        print(f"# Out of bounds values : {total_wrong} {'FAILED' if total_wrong else 'OK'}")
        print(f"# Avg bus bandwidth    : {sum(bw) / len(bw) if bw else 0:g}", flush=True)
        if a.json:
            import json
            with open(a.json, "w") as f:
                # docs/PERF_FORMAT.md: machine fields once per run; jccl's versions are empty here.
                f.write('{"format":"jccl-perf-1","runs":[{"label":' + json.dumps(label)
                        + ',"machine":' + json.dumps(machine) + ',"hostname":' + json.dumps(socket.gethostname())
                        + f',"cores":{os.cpu_count()},"backend":"gloo","ranks":{n},"jccl_version":"","jdk":""'
                        + ',"rows":[\n' + ",\n".join(rows) + "\n]}]}\n")
        result_q.put(total_wrong)
    dist.destroy_process_group()


def main(argv):
    a = parse_args(argv)
    import torch.multiprocessing as mp
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    port = free_port()
    os.environ["MASTER_PORT"] = str(port)
    ctx = mp.get_context("spawn")
    q = ctx.SimpleQueue()
    mp.spawn(worker, args=(a, port, q), nprocs=a.ranks, join=True)
    return 1 if q.get() else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
