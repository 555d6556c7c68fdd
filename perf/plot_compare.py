#!/usr/bin/env python3
"""Plots all-reduce bus bandwidth against size for Loom, Open MPI and the memcpy ceiling.

usage: perf/plot_compare.py CSV_DIR OUTPUT_PNG

CSV_DIR is what `perf/compare-mpi.sh --csv-dir CSV_DIR` kept: loom_N.csv and
mpi_N.csv per rank count N (size,time_us,algbw,busbw,wrong), loomreg_N.csv
where it ran with --registered, and memcpy.txt.
One panel per rank count. Needs matplotlib (`make perf-plot` makes a virtual
environment with it).
"""
import csv
import pathlib
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def read(path):
    rows = []
    with open(path, newline="") as f:
        for row in csv.reader(f):
            if not row or not row[0].isdigit():
                continue
            rows.append((int(row[0]), float(row[3])))
    return rows


def label(size):
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= scale:
            return f"{size // scale} {unit}"
    return f"{size} B"


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    folder = pathlib.Path(sys.argv[1])
    ceiling = float((folder / "memcpy.txt").read_text().strip())
    counts = sorted(int(p.stem.split("_")[1]) for p in folder.glob("loom_*.csv"))
    if not counts:
        sys.exit(f"no loom_N.csv in {folder}")
    fig, axes = plt.subplots(1, len(counts), figsize=(6 * len(counts), 4.2), squeeze=False)
    for ax, n in zip(axes[0], counts):
        names = {
            "loom": "Loom",
            "loomreg": "Loom, loomMemAlloc buffers (-R 1)",
            "mpi": "Open MPI (MPI_Allreduce)",
        }
        for side, style in (("loom", "o-"), ("loomreg", "^-"), ("mpi", "s--")):
            path = folder / f"{side}_{n}.csv"
            if not path.exists():
                continue
            rows = read(path)
            name = names[side]
            ax.plot([r[0] for r in rows], [r[1] for r in rows], style, label=name, markersize=3)
        ax.axhline(ceiling, color="gray", linestyle=":", label=f"memcpy, 1 thread ({ceiling:.1f})")
        ax.set_xscale("log", base=2)
        ticks = [s for s in (8, 1 << 10, 64 << 10, 1 << 20, 16 << 20, 256 << 20)]
        ax.set_xticks(ticks)
        ax.set_xticklabels([label(t) for t in ticks])
        ax.set_xlabel("message size")
        ax.set_ylabel("bus bandwidth (GB/s)")
        ax.set_title(f"float sum all-reduce, {n} ranks on one host")
        ax.grid(True, which="major", alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(sys.argv[2], dpi=110)


if __name__ == "__main__":
    main()
