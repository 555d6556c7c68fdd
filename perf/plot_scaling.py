#!/usr/bin/env python3
"""Plots ring vs tree all-reduce time against world size from `loom-topo --simulate`.

usage: perf/plot_scaling.py BUILD_DIR [TOPOLOGY_FILE] [OUTPUT_PNG]

Runs loom-topo for a latency-bound (8 B), a middle (64 KiB) and a
bandwidth-bound (1 GiB) all-reduce on 8..1024 ranks and draws one panel per
size: the tree, the best ring (any channel count) and the tuner's pick.
Needs matplotlib; not run by the tests (docs/scaling.md shows its output).
"""
import pathlib
import re
import subprocess
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

UNITS = {"us": 1.0, "ms": 1e3, "s": 1e6}
CANDIDATE = re.compile(r"(Direct|Tree|Ringx\d+) ([\d.]+) (us|ms|s) \(")
ROW = re.compile(r"^\s*(\d+) ranks")


def simulate(tool, topology, size):
    out = subprocess.run([tool, "--file", topology, "--simulate", "allreduce", "--bytes", size],
                         check=True, capture_output=True, text=True).stdout
    rows = []
    for line in out.splitlines():
        row = ROW.match(line)
        if not row:
            continue
        times = {name: float(value) * UNITS[unit] for name, value, unit in CANDIDATE.findall(line)}
        rows.append((int(row.group(1)), times))
    return rows


def main():
    build = pathlib.Path(sys.argv[1])
    source = pathlib.Path(__file__).resolve().parent.parent
    topology = sys.argv[2] if len(sys.argv) > 2 else str(source / "tests/data/topo/cluster-16x-h100.xml")
    output = sys.argv[3] if len(sys.argv) > 3 else str(source / "docs/img/scaling.png")
    tool = str(next(build.rglob("loom-topo")))
    sizes = ["8", "64K", "1G"]
    fig, axes = plt.subplots(1, len(sizes), figsize=(14, 4.2))
    for ax, size in zip(axes, sizes):
        rows = simulate(tool, topology, size)
        multi = [(n, t) for n, t in rows if "Tree" in t]
        ranks = [n for n, _ in multi]
        tree = [t["Tree"] for _, t in multi]
        ring = [min(v for k, v in t.items() if k.startswith("Ring")) for _, t in multi]
        ax.plot(ranks, ring, "o-", label="ring (best channel count)")
        ax.plot(ranks, tree, "s-", label="double binary tree")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("ranks (8 per host)")
        ax.set_ylabel("all-reduce time, us (model)")
        ax.set_title(f"{size}B all-reduce")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
    fig.suptitle("Loom cost model on " + pathlib.Path(topology).name +
                 " (beyond 128 ranks: hosts replicated)")
    fig.tight_layout()
    fig.savefig(output, dpi=110)
    print("wrote", output)


if __name__ == "__main__":
    main()
