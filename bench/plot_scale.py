"""Plots `kopr-bench scale`: memory and latency against the number of objects.

Usage: plot_scale.py RESULTS.json OUTPUT.png (run with bench/.venv's Python).
Left: the server's RSS (MiB) and RSS per object against the objects' JSON size.
Middle: full list, 1% selector list, GET p99 under updates and watch delivery p99 (HTTP/1.1 and HTTP/2).
Right (when measured): the operators' RSS at rest, kopr against the kube-rs Controller.
All on log axes.
"""

import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

LATENCIES = [
    ("list_ms", "full list"),
    ("selector_list_ms", "selector list (1%)"),
    ("first_page_ms", "first page of 500"),
    ("get_p99_ms", "GET p99 under updates"),
    ("watch_p99_ms", "watch delivery p99, HTTP/1.1"),
    ("watch_h2_p99_ms", "watch delivery p99, HTTP/2"),
]


def main(source, target):
    with open(source) as f:
        summary = json.load(f)
    steps = summary["steps"]
    xs = [s["objects"] for s in steps]
    operators = [s for s in summary.get("operators", []) if s["objects"] > 0]
    columns = 3 if operators else 2
    fig, axes = plt.subplots(1, columns, figsize=(5.5 * columns, 4.5))
    mem, lat = axes[0], axes[1]
    mem.plot(xs, [s["rss_mib"] for s in steps], marker="o", label="RSS (MiB)")
    mem.plot(xs, [s["rss_bytes_per_object"] / 1024 for s in steps], marker="s",
             label="RSS per object (KiB)")
    mem.plot(xs, [s["json_bytes_per_object"] / 1024 for s in steps], marker="^",
             linestyle="--", label="JSON per object (KiB)")
    mem.set_xscale("log")
    mem.set_yscale("log")
    mem.set_xlabel("objects")
    mem.set_title("server memory")
    mem.legend(fontsize=8)
    for key, label in LATENCIES:
        if not all(key in s for s in steps):
            continue  # results of an older bench
        lat.plot(xs, [s[key] for s in steps], marker="o", label=label)
    lat.set_xscale("log")
    lat.set_yscale("log")
    lat.set_xlabel("objects")
    lat.set_ylabel("ms")
    lat.set_title("latency")
    lat.legend(fontsize=8)
    if operators:
        ops = axes[2]
        for name in sorted({s["operator"] for s in operators}):
            mine = [s for s in operators if s["operator"] == name]
            ops.plot([s["objects"] for s in mine], [s["rss_at_rest_mib"] for s in mine],
                     marker="o", label=f"{name} RSS at rest (MiB)")
        ops.set_xscale("log")
        ops.set_yscale("log")
        ops.set_xlabel("objects")
        ops.set_title("operator memory")
        ops.legend(fontsize=8)
    fig.suptitle(f"{summary['command']}; {summary['cpus']} CPUs, load {summary['load_average']}",
                 fontsize=9)
    fig.tight_layout()
    fig.savefig(target, dpi=110)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
