#!/usr/bin/env python3
"""Loss curves of several loom-train runs in one PNG.

    python3 perf/plot_loss.py --out docs/img/trainer_loss.png none.csv int8.csv topk.csv
    python3 perf/plot_loss.py --out loss.png --label exact=none.csv --label int8=int8.csv

Each CSV is a `loom-train --log` file (columns step, loss, ...). A curve is
labelled with its file name unless given as LABEL=FILE; curves that coincide
stay visible (own dash, staggered markers) and say so in the legend. Needs
matplotlib (`pip install matplotlib`); nothing in the test suite does.
"""
import argparse
import csv
import os
import sys


def read_losses(path):
    steps, losses = [], []
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            steps.append(int(row["step"]))
            losses.append(float(row["loss"]))
    if not steps:
        sys.exit(f"plot_loss: {path} has no rows")
    return steps, losses


def smoothed(values, window):
    """Trailing mean over `window` steps, so noisy small-batch curves stay readable."""
    out, total = [], 0.0
    for i, v in enumerate(values):
        total += v
        if i >= window:
            total -= values[i - window]
        out.append(total / min(i + 1, window))
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", help="CSV logs, optionally LABEL=FILE")
    parser.add_argument("--out", required=True, help="PNG to write")
    parser.add_argument("--smooth", type=int, default=1, help="trailing mean window (steps)")
    parser.add_argument("--title", default="loom-train loss")
    args = parser.parse_args()

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4.5))
    # Curves often coincide (an exact run and a lossless one): each gets its
    # own dash and markers at staggered steps, and a copy says whose it is.
    styles = ["-", "--", ":", "-."]
    markers = ["o", "s", "^", "D", "v"]
    drawn = []
    for i, run in enumerate(args.runs):
        label, _, path = run.rpartition("=")
        label = label or os.path.splitext(os.path.basename(path))[0]
        steps, losses = read_losses(path)
        same_as = next((other for other, values in drawn if values == losses), None)
        drawn.append((label, losses))
        every = max(1, len(steps) // 10)
        text = f"{label} (final {losses[-1]:.3f})"
        if same_as is not None:
            text += f", identical to {same_as}"
        ax.plot(steps, smoothed(losses, args.smooth), linestyle=styles[i % len(styles)],
                marker=markers[i % len(markers)], markevery=(i * every // len(args.runs), every),
                markersize=5, label=text)
    ax.set_xlabel("step")
    ax.set_ylabel("training loss (nats / byte)")
    ax.set_title(args.title)
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(args.out, dpi=120)
    print(f"plot_loss: wrote {args.out}")


if __name__ == "__main__":
    main()
