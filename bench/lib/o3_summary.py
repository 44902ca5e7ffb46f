"""Summarise issue 5's O3 ingest runs (`bench/tsbs --disorder … --answers --results-prefix o3-<label>`).

    python3 bench/lib/o3_summary.py bench/results/2026-11-23-vm [--out o3-summary.json]

Groups the o3-<label>-sundial-<scale>x<days>d[-variant][-runN].json files by (label, variant), reports
committed rows/s (min, median, max, every run with the load average before it), the ratio of each
disordered variant's median to the in-order median of the same label (issue 5's target: ≥ 0.80), and
whether every run's answers (tsbs_disorder.ANSWER_QUERIES) are identical to the first in-order run's.
"""

import argparse
import json
import re
import statistics
import sys
from pathlib import Path

NAME = re.compile(r"^o3-(?P<label>[a-z0-9]+)-sundial-(?P<size>\d+x[\d.]+d)(?P<variant>-late10(?:-dup[\d.]+)?|-late-hours(?:-dup[\d.]+)?)?(?:-run\d+)?\.json$")


def main(argv=None) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("dir", type=Path)
    p.add_argument("--out", default="o3-summary.json")
    args = p.parse_args(argv)
    groups, reference = {}, None
    for path in sorted(args.dir.glob("o3-*.json"), key=lambda q: q.stat().st_mtime):
        m = NAME.match(path.name)
        if not m:
            continue
        r = json.loads(path.read_text())
        key = (m["label"], (m["variant"] or "-in-order")[1:])
        hashes = [a["sha256"] for a in r.get("answers", {}).get("queries", [])]
        if reference is None and key[1] == "in-order" and hashes:
            reference = {"file": path.name, "hashes": hashes}
        groups.setdefault(key, []).append({
            "file": path.name, "rows_per_s": r["load"]["committed_rows_per_s"],
            "all_rows_committed": r["load"]["all_rows_committed"], "wall_s": r["load"]["wall_until_committed_s"],
            "server_cpu_s": r["load"]["server_cpu_s"], "server_peak_rss_bytes": r["load"]["server_peak_rss_bytes"],
            "commit_lag_after_loader_s": r["load"]["commit_lag_after_loader_s"], "loadavg_before_load": r.get("loadavg_before_load"),
            "answer_hashes": hashes, "command": r.get("command")})
    out = {"reference_answers": reference, "groups": []}
    medians = {}
    for (label, variant), runs in sorted(groups.items()):
        rates = [x["rows_per_s"] or 0 for x in runs]
        same = [x["answer_hashes"] == reference["hashes"] for x in runs] if reference else []
        g = {"label": label, "variant": variant, "runs": runs, "min": min(rates), "median": statistics.median(rates),
             "max": max(rates),
             "median_server_cpu_s": round(statistics.median(x["server_cpu_s"] for x in runs), 2),
             "median_peak_rss_mib": round(statistics.median(x["server_peak_rss_bytes"] for x in runs) / 2**20),
             "median_commit_lag_s": statistics.median(x["commit_lag_after_loader_s"] for x in runs),
             "loadavg_1m": [x["loadavg_before_load"][0] for x in runs if x["loadavg_before_load"]],
             "answers_identical_to_reference": all(same) and bool(same),
             "answer_mismatches": [x["file"] for x, ok in zip(runs, same) if not ok]}
        medians[(label, variant)] = g["median"]
        out["groups"].append(g)
    for g in out["groups"]:
        base = medians.get((g["label"], "in-order"))
        g["median_ratio_to_in_order"] = round(g["median"] / base, 3) if base else None
    (args.dir / args.out).write_text(json.dumps(out, indent=1) + "\n")
    print("| binary | data | runs | min rows/s | median rows/s | max rows/s | median / in-order | server CPU s | "
          "peak RSS MiB | commit lag s | load avg (1 min) | answers = in-order |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---|")
    for g in out["groups"]:
        print(f"| {g['label']} | {g['variant']} | {len(g['runs'])} | {g['min']:,.0f} | {g['median']:,.0f} | "
              f"{g['max']:,.0f} | {g['median_ratio_to_in_order']} | {g['median_server_cpu_s']} | "
              f"{g['median_peak_rss_mib']} | {g['median_commit_lag_s']} | {' '.join(g['loadavg_1m'])} | "
              f"{'yes' if g['answers_identical_to_reference'] else 'NO: ' + ', '.join(g['answer_mismatches'])} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
