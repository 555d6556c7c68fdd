#!/usr/bin/env python3
"""Plots the cost model's all-reduce time against world size (loom-topo --simulate --json).

For a latency-bound (8 B), a middle (64 KiB) and a bandwidth-bound (1 GiB)
all-reduce on 8..1024 ranks, one panel per size: the double binary tree, the
best ring (any channel count), and the tuner's pick marked at every world size
(Direct on one host, the hierarchical or host tree beyond). Needs matplotlib;
not run by the tests (docs/scaling.md shows its output).
"""
import argparse
import json
import pathlib
import subprocess
import sys

SOURCE = pathlib.Path(__file__).resolve().parent.parent


def simulate(tool, topology, size):
    out = subprocess.run([str(tool), "--file", str(topology), "--simulate", "allreduce",
                          "--bytes", size, "--json"], check=True, capture_output=True,
                         text=True).stdout
    return json.loads(out)["rows"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("build", type=pathlib.Path, help="build folder holding loom-topo")
    parser.add_argument("--topology", type=pathlib.Path,
                        default=SOURCE / "tests/data/topo/cluster-16x-h100.xml",
                        help="topology file (default: the 16-node H100 cluster)")
    parser.add_argument("--output", type=pathlib.Path,
                        help="PNG to write (default: BUILD/scaling.png; docs/img/scaling.png "
                             "is the copy the docs show)")
    args = parser.parse_args()
    tools = [p for p in args.build.rglob("loom-topo") if p.is_file()]
    if not tools:
        sys.exit(f"plot_scaling.py: no loom-topo under {args.build} (build it first)")
    output = args.output or args.build / "scaling.png"

    import matplotlib  # pylint: disable=import-outside-toplevel
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # pylint: disable=import-outside-toplevel

    sizes = ["8", "64K", "1G"]
    fig, axes = plt.subplots(1, len(sizes), figsize=(14, 4.2))
    for ax, size in zip(axes, sizes):
        rows = simulate(tools[0], args.topology, size)
        ranks = [r["ranks"] for r in rows]

        def best(row, prefix):
            times = [c["us"] for c in row["candidates"]
                     if c["name"].startswith(prefix) and c["us"] is not None]
            return min(times) if times else float("nan")

        ax.plot(ranks, [best(r, "Ring") for r in rows], "o-", label="ring (best channel count)")
        ax.plot(ranks, [best(r, "Tree") for r in rows], "s-", label="double binary tree")
        ax.plot(ranks, [r["pick"]["us"] for r in rows], "k*", markersize=11, label="tuner's pick")
        for r in rows:
            ax.annotate(r["pick"]["name"], (r["ranks"], r["pick"]["us"]),
                        textcoords="offset points", xytext=(0, 7), ha="center", fontsize=7)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("ranks (8 per host)")
        ax.set_ylabel("all-reduce time, us (model)")
        ax.set_title(f"{size}B all-reduce")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle("Loom cost model on " + args.topology.name +
                 " (beyond 128 ranks: hosts replicated)")
    fig.tight_layout()
    fig.savefig(output, dpi=110)
    print("wrote", output)


if __name__ == "__main__":
    main()
