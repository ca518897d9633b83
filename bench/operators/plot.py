"""Plots the medians of `kopr-bench compare-operators`.

Usage: plot.py RESULTS.json OUTPUT.png (run with bench/.venv's Python).
Four panels of grouped bars (create and update phase per operator):
throughput, p50 latency, peak RSS and API requests per object.
"""

import json
import math
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

PANELS = [
    ("throughput", "throughput (objects/s, log)", True),
    ("p50_ms", "latency p50 (ms, log)", True),
    ("peak_rss_mib", "peak RSS (MiB)", False),
    ("requests_per_object", "API requests per object", False),
]
PHASES = [("create", "#3b75af"), ("update", "#ef8636")]


def value(medians, phase, key):
    figures = medians.get(phase)
    if not figures:
        return math.nan
    return figures[key]


def main(source, target):
    with open(source) as f:
        summary = json.load(f)
    medians = summary["medians"]
    names = [m["operator"] for m in medians]
    width = 0.38
    fig, axes = plt.subplots(2, 2, figsize=(10, 7))
    for ax, (key, title, log) in zip(axes.flat, PANELS):
        for offset, (phase, color) in enumerate(PHASES):
            xs = [i + (offset - 0.5) * width for i in range(len(names))]
            ys = [value(m, phase, key) for m in medians]
            bars = ax.bar(xs, ys, width, label=phase, color=color)
            for bar, y in zip(bars, ys):
                if not math.isnan(y):
                    label = f"{y:.0f}" if y >= 10 else f"{y:.1f}"
                    ax.annotate(label, (bar.get_x() + bar.get_width() / 2, y),
                                ha="center", va="bottom", fontsize=8)
        ax.set_title(title)
        ax.set_xticks(range(len(names)), names)
        if log:
            ax.set_yscale("log")
        ax.margins(y=0.15)
    axes.flat[0].legend()
    machine = summary["machine"]
    fig.suptitle(
        f"{summary['objects']} objects, median of {summary['runs']} run(s); "
        f"{machine['cpus']} CPUs ({machine['cpu_model']})",
        fontsize=10,
    )
    fig.tight_layout()
    fig.savefig(target, dpi=100)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: plot.py RESULTS.json OUTPUT.png")
    main(sys.argv[1], sys.argv[2])
