#!/usr/bin/env python3
"""torch.topk on the sizes loom_gpu_bench uses for its top-k 1 % row.

    python3 perf/gpu/topk_vs_torch.py [--iters 20]

Prints one line per size: elements, k, mean microseconds of
torch.topk(x.abs(), k) (Loom selects by magnitude too). Exit 77 when torch or
a CUDA device is missing, so scripts/gpu-check.sh reports a skip as a skip.
"""
import argparse
import sys


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--iters", type=int, default=20)
    args = parser.parse_args()
    try:
        import torch
    except ImportError:
        print("torch is not installed")
        return 77
    if not torch.cuda.is_available():
        print("torch sees no CUDA device")
        return 77
    print(f"# torch {torch.__version__} on {torch.cuda.get_device_name(0)}")
    print(f"{'bytes':>10} {'elements':>10} {'k':>8} {'time_us':>10}")
    for size in (1 << 20, 16 << 20, 256 << 20):
        n = size // 4
        k = max(1, -(-n // 100))  # ceil(1 %), as Loom's topkKeptCount
        x = torch.randn(n, device="cuda")
        for _ in range(2):
            torch.topk(x.abs(), k, sorted=False)
        start = torch.cuda.Event(enable_timing=True)
        stop = torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(args.iters):
            torch.topk(x.abs(), k, sorted=False)
        stop.record()
        torch.cuda.synchronize()
        print(f"{size:>10} {n:>10} {k:>8} {1000 * start.elapsed_time(stop) / args.iters:>10.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
