"""Charts of a bench/compare report, drawn with matplotlib (run by report.py with the bench venv's Python):

    python report_charts.py REPORT_JSON OUT_DIR     → prints the PNG paths it wrote, relative to the report

ingest.png (committed rows/s per scenario), disk.png (bytes per value after settling), queries-s<N>-w<W>.png
(mean latency per query type, log scale), load-s<N>.png (server CPU cores busy and memory over the load).
"""

import json
import sys
from pathlib import Path

import matplotlib
import matplotlib.ticker

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

COLORS = {"sundial": "#d62728", "influxdb": "#1f77b4", "questdb": "#9467bd", "victoriametrics": "#2ca02c",
          "postgres": "#8c564b", "clickhouse": "#ff7f0e"}


def grouped_bars(ax, groups, series, values, log=False):
    """groups: x labels; series: [(key, label)]; values[(group, key)] -> number or None."""
    n = max(1, len(series))
    width = 0.8 / n
    for i, (key, label) in enumerate(series):
        xs, ys = [], []
        for g, grp in enumerate(groups):
            v = values.get((grp, key))
            if v:
                xs.append(g - 0.4 + width * (i + 0.5))
                ys.append(v)
        ax.bar(xs, ys, width, label=label, color=COLORS.get(key))
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels([str(g) for g in groups])
    if log:
        ax.set_yscale("log")
        ax.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}"))
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))  # outside: never over a bar


def main(report_json, out_dir):
    rep = json.loads(Path(report_json).read_text())
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    pairs = rep["pairs"]
    order = []
    for p in pairs:
        if p["peer"] not in [k for k, _ in order]:
            order.append((p["peer"], p.get("title") or p["peer"]))
    scenarios = sorted({p["scenario"] for p in pairs})
    written = []

    def save(fig, name):
        fig.tight_layout()
        fig.savefig(out_dir / name, dpi=110)
        plt.close(fig)
        written.append(f"{out_dir.name}/{name}")

    fig, ax = plt.subplots(figsize=(10, 4.5))
    grouped_bars(ax, [f"scenario {s}" for s in scenarios], order,
                 {(f"scenario {p['scenario']}", p["peer"]): p["committed_rows_per_s"] for p in pairs if p["ok"]})
    ax.set_ylabel("committed rows/s")
    ax.set_title("Ingest (until a count query sees every row)")
    save(fig, "ingest.png")

    fig, ax = plt.subplots(figsize=(10, 4.5))
    grouped_bars(ax, [f"scenario {s}" for s in scenarios], order,
                 {(f"scenario {p['scenario']}", p["peer"]): p["bytes_per_value"] for p in pairs if p["ok"]})
    ax.set_ylabel("bytes per stored value (after settling)")
    ax.set_title("Disk")
    save(fig, "disk.png")

    for s in scenarios:
        ps = [p for p in pairs if p["scenario"] == s and p.get("queries")]
        if not ps:
            continue
        workers = sorted({w for p in ps for w in p["queries"]}, key=int)
        for w in workers:
            types = [t for t in ps[0]["queries"][w]]
            vals = {}
            for p in ps:
                for t, q in (p["queries"].get(w) or {}).items():
                    if isinstance(q, dict) and q.get("mean_ms"):
                        vals[(t, p["peer"])] = q["mean_ms"]
            fig, ax = plt.subplots(figsize=(15, 5))
            grouped_bars(ax, types, [(k, lbl) for k, lbl in order if any(p["peer"] == k for p in ps)], vals, log=True)
            ax.set_xticklabels(types, rotation=35, ha="right", fontsize=8)
            ax.set_ylabel("mean latency (ms, log scale)")
            ax.set_title(f"Query latency, scenario {s}, {w} worker(s)")
            save(fig, f"queries-s{s}-w{w}.png")

    for s in scenarios:
        lines = [(k, lbl, rep["timelines"].get(f"s{s}-{k}")) for k, lbl in order]
        lines = [x for x in lines if x[2]]
        if not lines:
            continue
        fig, (a1, a2) = plt.subplots(2, 1, figsize=(11, 6), sharex=True)
        for key, label, tl in lines:
            # CPU between samples at least 0.3 s apart (the last sample may follow the previous one closely and
            # would turn one clock tick into a spike)
            pts, prev = [], tl[0]
            for x in tl[1:]:
                if x[0] - prev[0] >= 0.3:
                    pts.append((x[0], (x[1] - prev[1]) / (x[0] - prev[0])))
                    prev = x
            a1.plot([p[0] for p in pts], [p[1] for p in pts], label=label, color=COLORS.get(key), lw=1.2)
            a2.plot([x[0] for x in tl], [x[2] / 2**20 for x in tl], label=label, color=COLORS.get(key), lw=1.2)
        a1.set_ylabel("server CPU (cores busy)")
        a2.set_ylabel("server memory (MiB)")
        a2.set_xlabel("seconds since the loader started")
        a1.set_title(f"Scenario {s}: server CPU and memory during the load (until committed)")
        a1.grid(alpha=0.3)
        a2.grid(alpha=0.3)
        a1.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
        save(fig, f"load-s{s}.png")
    print("\n".join(written))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
