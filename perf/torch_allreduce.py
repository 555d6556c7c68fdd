#!/usr/bin/env python3
"""dist.all_reduce with the "loom" backend against "gloo", in the same run.

usage: .venv/bin/python perf/torch_allreduce.py [--ranks 2 4] [--max 64M] [--iters 20]

For each rank count, mp.spawn starts the ranks once; each rank makes a "loom"
default group and a "gloo" group and times float32 sum all-reduces of 8 B to
--max (factor 8) on both, alternating per size, best of 3 timed batches per
side (the machine is shared). Prints per size: µs per call on each backend
and Gloo's time over Loom's. Not run by the tests (docs/performance.md,
"PyTorch").
"""
import argparse
import datetime
import os
import tempfile
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

import loom.torch  # noqa: F401  registers "loom"


def parse_size(text):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(text[:-1]) * units[text[-1]] if text[-1] in units else int(text)


def timed(tensor, group, iters):
    dist.all_reduce(tensor, group=group)  # warm-up
    best = float("inf")
    for _ in range(3):
        dist.barrier(group=group)
        start = time.perf_counter()
        for _ in range(iters):
            dist.all_reduce(tensor, group=group)
        best = min(best, (time.perf_counter() - start) / iters)
    # The slowest rank's best is the call's time.
    t = torch.tensor([best], dtype=torch.float64)
    dist.all_reduce(t, op=dist.ReduceOp.MAX, group=group)
    return t.item()


def rank_main(rank, size, store, sizes, iters, out):
    dist.init_process_group("loom", init_method=f"file://{store}", rank=rank, world_size=size,
                            timeout=datetime.timedelta(seconds=120))
    gloo = dist.new_group(backend="gloo")
    rows = []
    for nbytes in sizes:
        count = max(1, nbytes // 4)
        # Fewer iterations for large messages, enough for small ones to time.
        n = max(3, min(iters * 100, int(iters * (1 << 20) / max(nbytes, 1 << 14))))
        t = torch.ones(count)
        loom_s = timed(t, None, n)
        gloo_s = timed(t, gloo, n)
        rows.append((count * 4, loom_s, gloo_s))
    if rank == 0:
        with open(out, "w") as f:
            for b, ls, gs in rows:
                f.write(f"{b} {ls} {gs}\n")
    dist.destroy_process_group()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, nargs="+", default=[2, 4])
    parser.add_argument("--max", default="64M")
    parser.add_argument("--iters", type=int, default=20)
    args = parser.parse_args()
    sizes = []
    s = 8
    while s <= parse_size(args.max):
        sizes.append(s)
        s *= 8
    print(f"# dist.all_reduce float32 sum, loom vs gloo, torch {torch.__version__}, "
          f"{os.cpu_count()} cores, {datetime.date.today()}")
    for size in args.ranks:
        with tempfile.TemporaryDirectory() as work:
            out = os.path.join(work, "rows")
            mp.spawn(rank_main, args=(size, os.path.join(work, "store"), sizes, args.iters, out),
                     nprocs=size, join=True)
            print(f"\n# {size} ranks")
            print(f"{'bytes':>10} {'loom us':>10} {'gloo us':>10} {'gloo/loom':>10}")
            with open(out) as f:
                for line in f:
                    b, ls, gs = line.split()
                    ls, gs = float(ls) * 1e6, float(gs) * 1e6
                    print(f"{int(b):>10} {ls:>10.2f} {gs:>10.2f} {gs / ls:>10.1f}")


if __name__ == "__main__":
    main()
