#!/usr/bin/env python3
"""torch.distributed (NCCL) reference for jccl's NcclBench.

Same collectives, sizes, iteration counts and nccl-tests bus-bandwidth formulas as
org.jccl.cuda.bench.NcclBench, one process per GPU (torch.multiprocessing), float32,
timed like nccl-tests: warm-up, then `iters` back-to-back operations and one synchronize;
the reported time is the slowest rank's.

    python3 bench/gpu/torch_allreduce.py [-b 8] [-e 1G] [-f 8] [-w 5] [-g GPUS] [-o allreduce,...]
"""
import argparse
import os
import tempfile
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

OPS = "allreduce,allgather,reducescatter,broadcast,reduce,alltoall"


def parse_size(s):
    s = s.strip().upper()
    mul = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(s[-1:], 1)
    return int(s[:-1] if mul != 1 else s) * mul


def iters(nbytes):
    return max(20, min(1000, (256 << 20) // max(nbytes, 1)))


def bus_factor(op, n):
    if op == "allreduce":
        return 2.0 * (n - 1) / n
    if op in ("allgather", "reducescatter", "alltoall"):
        return (n - 1) / n
    return 1.0


def worker(rank, world, args, store):
    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", init_method=f"file://{store}", rank=rank, world_size=world,
                            device_id=torch.device("cuda", rank))
    n = world
    maxe = args.e // 4
    send = torch.zeros(maxe, dtype=torch.float32, device="cuda")
    recv = torch.zeros(maxe, dtype=torch.float32, device="cuda")
    if rank == 0:
        v = torch.cuda.nccl.version()
        print(f"# torch.distributed NCCL reference: {n} x {torch.cuda.get_device_name(0)}, torch {torch.__version__}, "
              f"NCCL {'.'.join(map(str, v)) if isinstance(v, tuple) else v}, one process per GPU, float, "
              f"NCCL_NVLS_ENABLE={os.environ.get('NCCL_NVLS_ENABLE')}", flush=True)
    for op in args.o.split(","):
        if rank == 0:
            print(f"\n# {op}, {n} ranks")
            print(f"#{'size(B)':>12} {'count':>12} {'type':>6} {'redop':>6} {'time(us)':>10} {'algbw(GB/s)':>10} "
                  f"{'busbw(GB/s)':>10} {'iters':>7}", flush=True)
        size = args.b
        while size <= args.e:
            elems = size // 4
            per_rank = op in ("allgather", "reducescatter", "alltoall")
            if elems == 0 or (per_rank and elems // n == 0):
                size *= args.f
                continue
            c = elems // n if per_rank else elems
            if op == "allreduce":
                fn = lambda: dist.all_reduce(send[:elems])
            elif op == "allgather":
                fn = lambda: dist.all_gather_into_tensor(recv[:c * n], send[:c])
            elif op == "reducescatter":
                fn = lambda: dist.reduce_scatter_tensor(recv[:c], send[:c * n])
            elif op == "broadcast":
                fn = lambda: dist.broadcast(send[:elems], src=0)
            elif op == "reduce":
                fn = lambda: dist.reduce(send[:elems], dst=0)
            elif op == "alltoall":
                fn = lambda: dist.all_to_all_single(recv[:c * n], send[:c * n])
            else:
                raise ValueError(f"unknown op {op}")
            it = iters(size)
            for _ in range(args.w):
                fn()
            torch.cuda.synchronize()
            dist.barrier()
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            for _ in range(it):
                fn()
            torch.cuda.synchronize()
            us = (time.perf_counter() - t0) / it * 1e6
            t = torch.tensor([us], device="cuda")
            dist.all_reduce(t, op=dist.ReduceOp.MAX)
            us = t.item()
            if rank == 0:
                algbw = size / (us * 1e-6) / 1e9
                count = c * n if per_rank else elems
                redop = "sum" if op in ("allreduce", "reducescatter", "reduce") else "none"
                print(f" {size:12d} {count:12d} {'float':>6} {redop:>6} {us:10.2f} {algbw:10.2f} "
                      f"{algbw * bus_factor(op, n):10.2f} {it:7d}", flush=True)
            size *= args.f
    dist.destroy_process_group()


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-b", type=parse_size, default=8)
    p.add_argument("-e", type=parse_size, default=1 << 30)
    p.add_argument("-f", type=int, default=8)
    p.add_argument("-w", type=int, default=5)
    p.add_argument("-g", type=int, default=torch.cuda.device_count())
    p.add_argument("-o", default=OPS)
    args = p.parse_args()
    # A file rendezvous: a TCP port picked in advance can be taken before the store binds it.
    store = os.path.join(tempfile.mkdtemp(prefix="jccl-torch-"), "store")
    mp.spawn(worker, args=(args.g, args, store), nprocs=args.g, join=True)


if __name__ == "__main__":
    main()
