"""The report of `bench/compare`: every scenario/peer result in `<results dir>/raw/*.json` merged into
REPORT.md, summary.csv, queries.csv, crosscheck.csv, report.json and (with matplotlib) charts/*.png.

The tables follow TDengine's TSBS report: ingest per scenario, ratio Sundial/peer, disk, per-query latency with
ratios; plus resources during the load, the answer cross-check and the issue's targets. Stdlib only; the charts
are drawn by report_charts.py in a venv with the pinned matplotlib (bench/requirements-charts.txt).
"""

import csv
import fcntl
import gzip
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import report_answers
from procutil import cache_dir
from tsbs_tools import QUERY_TYPES, parse_rfc3339

PEER_ORDER = ["sundial", "influxdb", "questdb", "victoriametrics", "postgres", "clickhouse"]
MIB = 2**20
CATEGORY = {t: c for c, ts in (
    ("simple rollups", ["single-groupby-1-1-1", "single-groupby-1-1-12", "single-groupby-1-8-1",
                        "single-groupby-5-1-1", "single-groupby-5-1-12", "single-groupby-5-8-1"]),
    ("aggregates", ["cpu-max-all-1", "cpu-max-all-8"]),
    ("double rollups", ["double-groupby-1", "double-groupby-5", "double-groupby-all"]),
    ("thresholds", ["high-cpu-1", "high-cpu-all"]),
    ("complex", ["lastpoint", "groupby-orderby-limit"])) for t in ts}  # TSBS's (and TDengine's) grouping
CHARTS_REQUIREMENTS = Path(__file__).resolve().parents[1] / "requirements-charts.txt"

# TDengine's published TSBS cpu-only report (TDengine 3.0, InfluxDB 1.8.10, TimescaleDB 2.6.0; AWS r4.8xlarge,
# 32 vCPU, client on a second machine). Context only: other hardware, other versions, not run here.
PUBLISHED_INGEST_RATIO = {  # TDengine/InfluxDB, TDengine/TimescaleDB (metrics/s)
    1: (3.0141, 5.8563), 2: (4.8969, 6.7412), 3: (4.5125, 5.5407), 4: (7.3538, 2.8646), 5: (10.6346, 1.5216)}
PUBLISHED_QUERY_MS = {  # scenario -> type -> (TDengine, InfluxDB, TimescaleDB) mean ms
    1: {"single-groupby-1-1-1": (0.91, 2.01, 2.93), "single-groupby-1-1-12": (1.83, 9.40, 4.87),
        "single-groupby-1-8-1": (2.09, 3.98, 4.30), "single-groupby-5-1-1": (1.03, 4.40, 3.19),
        "single-groupby-5-1-12": (2.94, 36.77, 6.38), "single-groupby-5-8-1": (2.63, 13.71, 5.91),
        "cpu-max-all-1": (1.27, 5.92, 5.55), "cpu-max-all-8": (3.46, 21.88, 22.83),
        "double-groupby-1": (7.79, 78.61, 116.66), "double-groupby-5": (12.10, 340.53, 346.48),
        "double-groupby-all": (17.31, 642.16, 489.04), "high-cpu-1": (2.05, 13.51, 3.92),
        "high-cpu-all": (96.75, 1129.62, 104.68), "groupby-orderby-limit": (47.48, 533.50, 367.40),
        "lastpoint": (3.95, 74.55, 17.64)},
    2: {"single-groupby-1-1-1": (0.94, 1.71, 3.27), "single-groupby-1-1-12": (1.92, 9.40, 5.07),
        "single-groupby-1-8-1": (2.09, 4.10, 4.56), "single-groupby-5-1-1": (1.08, 4.40, 3.34),
        "single-groupby-5-1-12": (3.00, 36.43, 7.02), "single-groupby-5-8-1": (2.60, 13.58, 9.6),
        "cpu-max-all-1": (1.30, 5.86, 5.54), "cpu-max-all-8": (3.36, 20.64, 23.72),
        "double-groupby-1": (266.69, 2785.23, 5467.91), "double-groupby-5": (446.23, 11702.49, 10984.63),
        "double-groupby-all": (686.42, 23509.02, 16660.7), "high-cpu-1": (2.23, 17.15, 4.05),
        "high-cpu-all": (3508.00, 52884.94, 4328.64), "groupby-orderby-limit": (1527.02, 23169.15, 12784.92),
        "lastpoint": (133.13, 2808.00, 755.37)},
}


def load_results(results_dir: Path) -> list:
    out = []
    for p in sorted((results_dir / "raw").glob("s*-*.json")):
        out.append(json.loads(p.read_text()))
    order = {n: i for i, n in enumerate(PEER_ORDER)}
    return sorted(out, key=lambda r: (r["scenario"], order.get(r["peer"], 99)))


def _ok(r):
    return not r.get("error") and not r.get("install_error") and r.get("load", {}).get("all_rows_committed")


def _fmt(v, digits=0):
    if v is None:
        return "–"
    if isinstance(v, str):
        return v
    return f"{v:,.{digits}f}"


def _ratio(a, b, digits=2):
    return f"{a / b:.{digits}f}×" if isinstance(a, (int, float)) and isinstance(b, (int, float)) and b else "–"


def _mib(b):
    return b / MIB if isinstance(b, (int, float)) else None


def _table(header, rows, left=1):
    """A Markdown table; the first `left` columns are text (left-aligned), the others numbers."""
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * left + "---:|" * (len(header) - left)]
    out += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return out


# ---------------------------------------------------------------- answers

def load_answers(results_dir, r):
    f = r.get("answers_file")
    if not f or not (results_dir / f).exists():
        return {}
    with gzip.open(results_dir / f, "rt") as fh:
        return json.load(fh)


def crosscheck(results_dir, results) -> dict:
    """{scenario: {type: {"reference": peer, peer: status}}}; status: ("ok"|"mismatch"|"error"|"n/a", text)."""
    out = {}
    for sc in sorted({r["scenario"] for r in results}):
        rs = [r for r in results if r["scenario"] == sc and r.get("queries")]
        if not rs:
            continue
        answers = {r["peer"]: load_answers(results_dir, r) for r in rs}
        fmts = {r["peer"]: r.get("tsbs_format") for r in rs}
        per_type = out.setdefault(sc, {})
        for qtype in QUERY_TYPES:
            have = [p for p in answers if "answers" in answers[p].get(qtype, {}) and answers[p][qtype]["answers"]]
            ref = "influxdb" if "influxdb" in have else (have[0] if have else None)
            entry = per_type.setdefault(qtype, {"reference": ref})
            for r in rs:
                p = r["peer"]
                a = answers[p].get(qtype)
                if a is None:
                    na = r["queries"].get("1", {}).get(qtype, {}).get("na")
                    entry[p] = ("n/a", "not comparable (see notes)" if not na else "no such query for this peer")
                elif "error" in a:
                    entry[p] = ("error", a["error"])
                elif p == ref:
                    entry[p] = ("ref", f"reference ({len(a['answers'])} answers)")
                else:
                    entry[p] = _compare_answers(qtype, answers[ref][qtype]["answers"], a["answers"],
                                                fmts.get(ref), fmts.get(p))
    return out


def _compare_answers(qtype, ref_a, got_a, ref_fmt, fmt):
    """(status, text) of one peer's first answers against the reference's, query by query."""
    n = min(len(ref_a), len(got_a))
    if n == 0:
        return ("error", "no answers printed")
    same_q = [i for i in range(n) if report_answers.question(ref_a[i]["query"]) ==
              report_answers.question(got_a[i]["query"])]
    if not same_q:
        return ("n/a", "TSBS's generator asks this format other hosts/times: not the same question")
    diffs = []
    for i in same_q:
        na, nb = ref_a[i].get("n_rows"), got_a[i].get("n_rows")
        if na is not None and nb is not None and na != nb:
            diffs.append(f"query {i + 1}: {na} rows vs {nb}")
            continue
        ra_rows = [tuple(map(_tup, row)) for row in ref_a[i]["rows"]]
        rb_rows = [tuple(map(_tup, row)) for row in got_a[i]["rows"]]
        if len(ra_rows) < (na or 0) or len(rb_rows) < (nb or 0):
            # Kept rows were cut at the same count, but sorted with or without host names: compare only the
            # timestamps both kept whole (those before the last one of either).
            cut = min(r[-1][0] for r in (ra_rows, rb_rows) if r and r[-1][0] is not None)
            ra_rows = [r for r in ra_rows if r[0] is not None and r[0] < cut]
            rb_rows = [r for r in rb_rows if r[0] is not None and r[0] < cut]
        d = report_answers.compare(ra_rows, rb_rows)
        if d:
            diffs.append(f"query {i + 1}: {d}")
    if diffs:
        why = report_answers.definition_difference(qtype, ref_fmt, fmt)
        if why and len(diffs) == len(same_q):
            return ("tsbs", f"differs as TSBS's queries do: {why}")
        return ("mismatch", "; ".join(diffs[:2]))
    other = n - len(same_q)
    return ("ok", f"{len(same_q)} answers equal" + (f", {other} to another question not compared" if other else ""))


def _tup(x):
    return tuple(x) if isinstance(x, list) else x


# ---------------------------------------------------------------- report

def write(results_dir: Path, charts: bool = True, log=print) -> dict:
    results_dir = Path(results_dir)
    results = load_results(results_dir)
    checks = crosscheck(results_dir, results)
    summary = build_summary(results, checks)
    (results_dir / "report.json").write_text(json.dumps(summary, indent=1) + "\n")
    write_csvs(results_dir, results, checks)
    chart_files, chart_error = [], None
    if charts and results:
        try:
            chart_files = make_charts(results_dir, log)
        except Exception as e:  # noqa: BLE001 - a report without charts is still a report
            chart_error = str(e)[-800:]
            log(f"charts not made: {chart_error}")
    md = markdown(results, checks, summary, chart_files, chart_error)
    notes = results_dir / "NOTES.md"  # what the person who ran it observed, kept beside the data
    if notes.exists():
        head, sep, rest = md.partition("\n## Scenarios")
        md = head + "\n## Notes on this run\n\n" + notes.read_text().strip() + "\n" + sep + rest
    (results_dir / "REPORT.md").write_text(md)
    return {"markdown": results_dir / "REPORT.md", "charts": chart_files}


def build_summary(results, checks) -> dict:
    pairs = []
    for r in results:
        ld, dk = r.get("load", {}), r.get("disk", {})
        pairs.append({
            "scenario": r["scenario"], "peer": r["peer"], "title": r.get("title"), "version": r.get("version"),
            "ok": bool(_ok(r)), "error": r.get("error") or r.get("install_error"),
            "rows": r["sizes"]["rows"], "counted_rows": ld.get("counted_rows"),
            "committed_rows_per_s": ld.get("committed_rows_per_s"),
            "committed_metrics_per_s": ld.get("committed_metrics_per_s"),
            "load_runs_committed_rows_per_s": [x.get("committed_rows_per_s") for x in r.get("load_runs") or []],
            "loader_reported_rows_per_s": ld.get("loader_reported", {}).get("rows", {}).get("rate_per_s"),
            "wall_until_committed_s": ld.get("wall_until_committed_s"),
            "commit_lag_after_loader_s": ld.get("commit_lag_after_loader_s"),
            "server_cpu_s": ld.get("server_cpu_s"), "server_peak_mem_bytes": ld.get("server_peak_mem_bytes"),
            "loader_cpu_s": ld.get("loader_cpu_s"), "generator_cpu_s": ld.get("generator_cpu_s"),
            "server_disk_write_bytes": ld.get("server_disk_write_bytes"),
            "disk_after_load_bytes": dk.get("after_load", {}).get("allocated_bytes"),
            "disk_after_settle_bytes": dk.get("after_settle", {}).get("allocated_bytes"),
            "disk_after_stop_bytes": dk.get("after_stop", {}).get("allocated_bytes"),
            "settled_disk": r.get("settled_disk", "after_settle"),
            "bytes_per_value": _settled(r).get("bytes_per_value"),
            "queries": r.get("queries"),
        })
    mismatches = sum(1 for sc in checks.values() for t in sc.values() for k, v in t.items()
                     if k != "reference" and v[0] == "mismatch")
    return {"schema": "sundial-bench-compare-report/1", "pairs": pairs, "crosscheck": checks,
            "crosscheck_mismatches": mismatches,
            "scenarios": {r["scenario"]: r["sizes"] for r in results},
            "timelines": {f"s{r['scenario']}-{r['peer']}": r.get("load", {}).get("timeline") for r in results}}


def write_csvs(results_dir, results, checks):
    keys = ["scenario", "peer", "version", "ok", "rows", "counted_rows", "committed_rows_per_s",
            "committed_metrics_per_s", "loader_reported_rows_per_s", "wall_until_committed_s",
            "commit_lag_after_loader_s", "server_cpu_s", "server_peak_mem_bytes", "loader_cpu_s", "generator_cpu_s",
            "server_disk_write_bytes", "disk_after_load_bytes", "disk_after_settle_bytes", "disk_after_stop_bytes",
            "settled_disk", "bytes_per_value", "error"]
    with open(results_dir / "summary.csv", "w", newline="") as f:
        w = csv.DictWriter(f, keys, extrasaction="ignore")
        w.writeheader()
        for p in build_summary(results, checks)["pairs"]:
            w.writerow(p)
    qkeys = ["scenario", "peer", "workers", "query_type", "queries", "mean_ms", "min_ms", "median_ms", "p50_ms",
             "p95_ms", "p99_ms", "max_ms", "queries_per_s", "server_cpu_s", "status"]
    with open(results_dir / "queries.csv", "w", newline="") as f:
        w = csv.DictWriter(f, qkeys, extrasaction="ignore")
        w.writeheader()
        for r in results:
            for workers, per in (r.get("queries") or {}).items():
                for qtype, q in per.items():
                    status = "n/a" if "na" in q else ("error: " + q["error"] if "error" in q else "ok")
                    w.writerow({"scenario": r["scenario"], "peer": r["peer"], "workers": workers,
                                "query_type": qtype, "status": status, **q})
    with open(results_dir / "crosscheck.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["scenario", "query_type", "reference", "peer", "status", "detail"])
        for sc, per in checks.items():
            for qtype, entry in per.items():
                for p, v in entry.items():
                    if p != "reference":
                        w.writerow([sc, qtype, entry["reference"], p, v[0], v[1]])


def _peers_in(results, sc):
    return [r for r in results if r["scenario"] == sc]


def page_cache_note(results) -> str:
    """How the loads read their data files: from the page cache (bench/compare reads each file in before the
    load's clock starts) for every pair, or not for some (pairs run before it did, or files too large)."""
    loads = [r["load"] for r in results if isinstance(r.get("load"), dict) and r["load"].get("data_mode") == "file"]
    if not loads:
        return ""
    cached = sum(1 for l in loads if l.get("data_file_cached"))
    if cached == len(loads):
        return ", each data file read into the page cache before its load's clock starts"
    return (f"; data file read into the page cache before the load for {cached} of {len(loads)} pairs (the others "
            "may have read it from disk, at the loader's CPU cost on the shared cores)")


def run_size_note(config) -> str:
    """How the timed query runs were sized (bench/compare's `run_size`), if they were."""
    secs = config.get("query_run_seconds")
    if not secs:
        return ""
    return (f" (each run lengthened to about {secs:g} s at its type's 1-worker pace, up to 1,000 queries: "
            "`queries` in queries.csv)")


def markdown(results, checks, summary, chart_files, chart_error) -> str:
    if not results:
        return "# bench/compare\n\nNo results yet.\n"
    first = results[0]
    m = first["machine"]
    scenarios = sorted({r["scenario"] for r in results})
    peers = [p for p in PEER_ORDER if any(r["peer"] == p for r in results)]
    titles = {r["peer"]: r.get("title") or r["peer"] for r in results}
    out = ["# Sundial vs peers: TSBS cpu-only, side by side on one machine", "",
           f"Machine: {m['nproc']} cores ({m['cpu_model']}), {m['mem_total_bytes'] / 2**30:.0f} GiB, {m['os']}, "
           f"kernel {m['kernel']}; loader and server share the cores (loopback). Load average at the start of the "
           f"first pair: {' '.join(m['loadavg_at_start'])}. Git: `{first['git'].get('commit')}`"
           f"{' (dirty)' if first['git'].get('dirty') else ''}.", "",
           "Command(s): " + ", ".join(sorted({f"`{r['command']}`" for r in results})), "",
           f"Load: TSBS loaders, {first['config']['workers']} workers, batch {first['config']['batch_size']}"
           f"{page_cache_note(results)}; "
           f"queries: {first['config']['queries_per_type']} per type at "
           f"{', '.join(map(str, first['config']['query_workers']))} worker(s)"
           f"{run_size_note(first['config'])}; answers of the first "
           f"{first['config']['check_queries']} queries of each type cross-checked. Settle: "
           f"{first['config']['settle']:.0f} s.", ""]
    sundial = [r for r in results if r["peer"] == "sundial"]
    bins = sorted({(r["binary"]["sha256"][:12], r["binary"]["mtime"]) for r in sundial if r.get("binary")})
    if bins:
        out += ["Sundial binary: " + "; ".join(f"sha256 {h}…, built {m}" for h, m in bins)
                + (" — **more than one binary across the pairs: the target dir was rebuilt during the run**"
                   if len(bins) > 1 else "") + ".", ""]
    if any("debug build" in str(r.get("version")) for r in sundial):
        out += ["> **Sundial ran as a debug build: its timings are meaningless (smoke test only).**", ""]
    # scenarios
    out += ["## Scenarios", ""]
    rows = []
    for sc in scenarios:
        s = results[[r["scenario"] for r in results].index(sc)]["sizes"]
        rows.append([sc, f"{s['scale']:,}", _dur(s["duration_s"]), f"{s['rows']:,}",
                     f"{s['report_scale']:,} × {_dur(s['report_duration_s'])}",
                     "none" if s["shortened_by"] == 1 else f"÷ {s['shortened_by']:g}",
                     "yes" + (f" (first {_dur(_span(s))})" if s.get("queries") and _span(s) != s["duration_s"] else "")
                     if s.get("queries") else "no"])
    out += _table(["scenario", "devices", "duration", "rows", "report's size", "duration shortened", "queries"], rows)
    mixed = [sc for sc in scenarios if len({r["sizes"]["rows"] for r in _peers_in(results, sc)}) > 1]
    if mixed:
        out += ["", f"> **Warning: scenario(s) {', '.join(map(str, mixed))} mix results of different sizes "
                    "(runs with other --scale/--duration into the same results dir): their ratios compare unlike "
                    "data. Rerun those pairs.**"]
    # peers
    out += ["", "## Databases", ""]
    rows = []
    for p in peers:
        r = next(x for x in results if x["peer"] == p)
        inst = ("NOT INSTALLED: " + r["install_error"][:300]) if r.get("install_error") else (r.get("version") or "")
        rows.append([titles[p], inst.replace("|", "\\|"),
                     "; ".join(f"{k}: {v}" for k, v in (r.get("settings") or {}).items()).replace("|", "\\|")])
    out += _table(["database", "version / install", "settings (and what its docs recommend)"], rows, 3)
    out += ["", "TimescaleDB, TDengine and IoTDB are not installable from this machine's registries: PostgreSQL "
                "runs TSBS's TimescaleDB schema as plain tables, and TDengine's published figures are quoted below "
                "as context only.", ""]
    notes = [(titles[p], n) for p in peers for n in next(x for x in results if x["peer"] == p).get("notes", [])]
    if notes:
        out += ["What is not comparable:", ""] + [f"- **{t}**: {n}" for t, n in notes] + [""]
    failures = [r for r in results if r.get("error") or r.get("install_error")]
    if failures:
        out += ["## Failures", ""]
        for r in failures:
            msg = (r.get("install_error") or r.get("error") or "").strip().replace("\n", " ⏎ ")
            out.append(f"- scenario {r['scenario']}, **{titles[r['peer']]}**: {msg[:600]}")
        out.append("")
    # ingest
    out += ["## Ingest (committed: until a count query sees every row)", "",
            "Committed rows/s = rows ÷ (time from starting the loader until `count` returns all rows). "
            "\"All rows\" is checked for every database.", ""]
    runs = any(len(r.get("load_runs") or []) > 1 for r in results)
    if runs:
        out += ["With `--load-runs`: each database was loaded several times, each time on a fresh data directory, the "
                "runs of a scenario taken in turn across its databases; the figures of this table and the next "
                "two (ratios, resources) are each pair's median run by committed rows/s (the slower middle one of "
                "an even count), every run's committed rows/s in the last column; disk and queries are of the "
                "last run's data.", ""]
    rows = []
    for sc in scenarios:
        for r in _peers_in(results, sc):
            ld = r.get("load", {})
            rep = ld.get("loader_reported", {}).get("rows", {}).get("rate_per_s") or \
                ld.get("loader_reported", {}).get("metrics", {}).get("rate_per_s")
            rows.append([sc, titles[r["peer"]], _fmt(ld.get("committed_rows_per_s")),
                         _fmt(ld.get("committed_metrics_per_s")),
                         ("✓ " if ld.get("all_rows_committed") else "✗ ") + f"{_fmt(ld.get('counted_rows'))} / "
                         f"{r['sizes']['rows']:,}" if ld else _status(r),
                         _fmt(ld.get("wall_until_committed_s"), 2), _fmt(ld.get("commit_lag_after_loader_s"), 2),
                         _fmt(rep)] + ([_runs_cell(r)] if runs else []))
    out += _table(["scenario", "database", "committed rows/s", "committed metrics/s", "rows counted",
                   "load wall (s)", "of which after the loader exited (s)", "loader-reported rate"]
                  + (["each run's committed rows/s (median in bold)"] if runs else []), rows, 2)
    out += ["", "Ratio Sundial / peer, committed rows/s (> 1: Sundial ingests faster):", ""]
    others = [p for p in peers if p != "sundial"]
    rows = []
    for sc in scenarios:
        s = _get(results, sc, "sundial")
        row = [sc]
        for p in others:
            o = _get(results, sc, p)
            row.append(_ratio(_rate(s), _rate(o)))
        rows.append(row)
    out += _table(["scenario"] + [titles[p] for p in others], rows)
    # resources
    out += ["", "## Resources during the load", "",
            "Server CPU: utime+stime from /proc (whole process tree for PostgreSQL); memory: peak VmRSS sampled "
            "every 0.5 s (sum of PSS for PostgreSQL); written: /proc/PID/io write_bytes; loader CPU: its rusage. "
            "Load average before: /proc/loadavg when the load started (when the pair started, in results from before "
            "it was kept per load; the machine is shared, and with `--load-runs` a run but the first follows another "
            "load).", ""]
    rows = []
    for sc in scenarios:
        for r in _peers_in(results, sc):
            ld = r.get("load")
            if not ld:
                continue
            rows.append([sc, titles[r["peer"]], " ".join(ld.get("loadavg_at_start") or r.get("loadavg_at_start") or ["–"]),
                         _fmt(ld.get("server_cpu_s"), 1), _fmt(ld.get("server_cpu_util"), 2),
                         _fmt(_mib(ld.get("server_peak_mem_bytes"))), _fmt(_mib(ld.get("server_disk_write_bytes"))),
                         _fmt(ld.get("loader_cpu_s"), 1), _fmt(ld.get("generator_cpu_s"), 1)])
    out += _table(["scenario", "database", "load average before", "server CPU (s)", "cores busy", "peak memory (MiB)",
                   "written to disk (MiB)", "loader CPU (s)", "generator CPU (s, streamed data)"], rows, 3)
    # disk
    out += ["", "## Disk", "", "Allocated bytes (`du`) of the data directories; bytes per value = settled size ÷ "
            "(rows × 10 fields), settled = after settling (after a clean stop where marked).", ""]
    rows = []
    for sc in scenarios:
        s = _get(results, sc, "sundial")
        for r in _peers_in(results, sc):
            dk = r.get("disk")
            if not dk:
                continue
            rows.append([sc, titles[r["peer"]], _fmt(_mib(dk.get("after_load", {}).get("allocated_bytes")), 1),
                         _fmt(_mib(dk.get("after_settle", {}).get("allocated_bytes")), 1),
                         _fmt(_mib(dk.get("after_stop", {}).get("allocated_bytes")), 1),
                         _fmt(_settled(r).get("bytes_per_value"), 3)
                         + (" (after stop)" if r.get("settled_disk") == "after_stop" else ""),
                         _ratio(_disk(r), _disk(s)) if r["peer"] != "sundial" else "1.00×"])
    out += _table(["scenario", "database", "after load (MiB)", "after settle (MiB)", "after clean stop (MiB)",
                   "bytes/value", "peer / Sundial (settled)"], rows, 2)
    # queries
    for sc in scenarios:
        rs = [r for r in _peers_in(results, sc) if r.get("queries")]
        if not rs:
            continue
        for w in rs[0]["config"]["query_workers"]:
            w = str(w)
            out += ["", f"## Query latency, scenario {sc}, {w} worker(s): mean ms (ratio peer / Sundial)", ""]
            rows = []
            for qtype in QUERY_TYPES:
                s = _q(_get(results, sc, "sundial"), w, qtype)
                row = [CATEGORY.get(qtype, ""), qtype, _qcell(s)]
                best = None
                for r in rs:
                    if r["peer"] == "sundial":
                        continue
                    q = _q(r, w, qtype)
                    cell = _qcell(q)
                    if isinstance(q, dict) and q.get("mean_ms") is not None:
                        best = q["mean_ms"] if best is None else min(best, q["mean_ms"])
                        if isinstance(s, dict) and s.get("mean_ms"):
                            cell += f" ({q['mean_ms'] / s['mean_ms']:.2f}×)"
                    row.append(cell)
                row.append(_ratio(s.get("mean_ms") if isinstance(s, dict) else None, best))
                rows.append(row)
            out += _table(["category", "query type", "Sundial"]
                          + [titles[r["peer"]] for r in rs if r["peer"] != "sundial"] + ["Sundial / best peer"], rows, 2)
            qps = []
            for r in rs:
                vals = [q.get("queries_per_s") for q in (r["queries"].get(w) or {}).values()
                        if isinstance(q, dict) and q.get("queries_per_s")]
                if vals:
                    qps.append(f"{titles[r['peer']]} {sum(vals) / len(vals):,.1f}")
            if qps:
                out += ["", "Mean queries/s over the types run: " + ", ".join(qps) + ". p50/p95/p99 per type: "
                        "`queries.csv`."]
    # cross-check
    if checks:
        out += ["", "## Answer cross-check", "",
                "The first answers of each query type from every database, normalised (rows as time, host names and "
                "numbers; numbers within 1e-6) and compared with the reference (InfluxDB 1.x when present). "
                f"**Mismatches: {summary['crosscheck_mismatches']}.** A fast wrong answer is not a result.", ""]
        for sc, per in checks.items():
            ps = [r["peer"] for r in _peers_in(results, sc) if r.get("queries")]
            rows = []
            for qtype, entry in per.items():
                rows.append([qtype] + [_check_cell(entry.get(p)) for p in ps])
            out += [f"Scenario {sc}:", ""] + _table(["query type"] + [titles[p] for p in ps], rows, 1 + len(ps)) + [""]
            whys = sorted({v[1] for entry in per.values() for k, v in entry.items() if k != "reference" and v[0] == "tsbs"})
            out += [f"≠: {w}." for w in whys] + ([""] if whys else [])
    # targets
    out += ["## Targets (issue 7)", "", "Sundial ahead of every peer here: committed ingest ≥ 2× the best peer's, "
            "settled disk ≤ ½ of the best peer's, each query type's mean latency (1 worker) ≤ 0.5× the best "
            "peer's.", ""]
    rows = []
    for sc in scenarios:
        s = _get(results, sc, "sundial")
        peers_ok = [r for r in _peers_in(results, sc) if r["peer"] != "sundial" and _ok(r)]
        if not s or not _ok(s) or not peers_ok:
            rows.append([sc, "–", "–", "–"])
            continue
        best_rate = max(peers_ok, key=_rate)
        best_disk = min(peers_ok, key=_disk)
        ing = _rate(s) / _rate(best_rate)
        dsk = _disk(s) / _disk(best_disk)
        qcell = "–"
        if s.get("queries"):
            met = missed = 0
            worst = None
            for qtype in QUERY_TYPES:
                sq = _q(s, "1", qtype)
                bq = [(_q(r, "1", qtype) or {}).get("mean_ms") for r in peers_ok]
                bq = [b for b in bq if b]
                if not (isinstance(sq, dict) and sq.get("mean_ms") and bq):
                    continue
                rt = sq["mean_ms"] / min(bq)
                met, missed = (met + 1, missed) if rt <= 0.5 else (met, missed + 1)
                if worst is None or rt > worst[1]:
                    worst = (qtype, rt)
            qcell = f"{met} met, {missed} missed" + (f" (worst: {worst[0]} at {worst[1]:.2f}×)" if worst else "")
        rows.append([sc, f"{ing:.2f}× {titles[best_rate['peer']]} — {'met' if ing >= 2 else 'MISSED'}",
                     f"{dsk:.2f}× {titles[best_disk['peer']]} — {'met' if dsk <= 0.5 else 'MISSED'}", qcell])
    out += _table(["scenario", "ingest: Sundial / best peer", "disk: Sundial / best peer",
                   "query types at ≤ 0.5× the best peer"], rows, 4)
    # published
    out += ["", "## Published context: TDengine's TSBS report (not run here)", "",
            "TDengine 3.0 vs InfluxDB 1.8.10 vs TimescaleDB 2.6.0 on AWS r4.8xlarge (32 vCPU, 244 GiB), client on a "
            "second machine, full-size scenarios. Figures as published by TDengine; other hardware and versions, so "
            "only the ratios are worth reading beside the tables above.", "",
            "Ingest, TDengine / InfluxDB and TDengine / TimescaleDB (metrics/s): " + "; ".join(
                f"scenario {sc}: {a:.2f}× / {b:.2f}×" for sc, (a, b) in PUBLISHED_INGEST_RATIO.items()), ""]
    for sc, per in PUBLISHED_QUERY_MS.items():
        out += [f"Scenario {sc} query means, ms (TDengine / InfluxDB / TimescaleDB): " + "; ".join(
            f"{t} {a:g} / {b:g} / {c:g}" for t, (a, b, c) in per.items()), ""]
    # charts
    out += ["## Charts", ""]
    if chart_files:
        out += [f"![{Path(c).stem}]({c})" for c in chart_files] + [""]
    else:
        out += [f"Not made: {chart_error or 'disabled (--no-charts)'}", ""]
    out += ["## Files", "", "`raw/s<scenario>-<peer>.json`: everything measured for one pair, with the exact commands "
            "(TSBS generator, loader, runners, server). `answers/`: normalised answers for the cross-check. "
            "`summary.csv`, `queries.csv`, `crosscheck.csv`, `report.json`: the tables as data.", ""]
    return "\n".join(out)


def _dur(s):
    s = int(s)
    if s % 86400 == 0:
        return f"{s // 86400} d"
    if s % 3600 == 0:
        return f"{s // 3600} h"
    if s % 60 == 0:
        return f"{s // 60} min"
    return f"{s} s"


def _span(sizes):
    return int((parse_rfc3339(sizes["query_end"]) - parse_rfc3339(sizes["start"])).total_seconds())


def _get(results, sc, peer):
    return next((r for r in results if r["scenario"] == sc and r["peer"] == peer), None)


def _rate(r):
    return (r or {}).get("load", {}).get("committed_rows_per_s") if r and _ok(r) else None


def _runs_cell(r) -> str:
    """Every load run's committed rows/s (--load-runs), the one the pair's figures are from in bold."""
    chosen = r.get("load", {}).get("run")
    cells = []
    for x in r.get("load_runs") or []:
        v = "failed" if x.get("error") else _fmt(x.get("committed_rows_per_s")) if x.get("all_rows_committed") else "✗"
        cells.append(f"**{v}**" if x.get("run") == chosen else v)
    return ", ".join(cells)


def _settled(r) -> dict:
    """The settled disk figure: after settling, or after a clean stop for peers that preallocate (QuestDB)."""
    dk = (r or {}).get("disk", {})
    return dk.get(r.get("settled_disk", "after_settle")) or dk.get("after_settle") or {}


def _disk(r):
    return _settled(r).get("allocated_bytes") if r and _ok(r) else None


def _status(r):
    if r.get("install_error"):
        return "not installed"
    return "failed" if r.get("error") else "–"


def _q(r, w, qtype):
    if not r or not r.get("queries"):
        return None
    return r["queries"].get(w, {}).get(qtype)


def _qcell(q):
    if q is None:
        return "–"
    if "na" in q:
        return "n/a"
    if "error" in q:
        return "error"
    return _fmt(q.get("mean_ms"), 2)


def _check_cell(v):
    if v is None:
        return "–"
    kind, text = v
    return {"ok": "✓ " + text, "ref": text, "n/a": "n/a" + (f" ({text})" if "question" in text else ""),
            "tsbs": "≠ (TSBS query differs)", "error": "error: " + text[:80].replace("|", "/"),
            "mismatch": "**MISMATCH** " + text[:160].replace("|", "/")}[kind]


# ---------------------------------------------------------------- charts

def charts_python(log=print) -> Path:
    """A venv with the pinned matplotlib (bench/requirements-charts.txt), made once under $SUNDIAL_CACHE."""
    venv = cache_dir() / "bench-venv"
    py = venv / "bin" / "python"
    want = hashlib.sha256(CHARTS_REQUIREMENTS.read_bytes()).hexdigest()
    stamp = venv / ".requirements.sha"
    cache_dir().mkdir(parents=True, exist_ok=True)
    with open(cache_dir() / ".bench-venv.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # a test run and a benchmark may both want it at once
        if not py.exists() or (stamp.read_text().strip() if stamp.exists() else "") != want:
            log(f"making the charts venv {venv} (pinned matplotlib from PyPI)")
            if not py.exists():
                subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
            subprocess.run([str(py), "-m", "pip", "install", "-q", "--disable-pip-version-check", "-r",
                            str(CHARTS_REQUIREMENTS)], check=True, capture_output=True)
            stamp.write_text(want)
    return py


def make_charts(results_dir: Path, log=print) -> list:
    py = charts_python(log)
    script = Path(__file__).with_name("report_charts.py")
    p = subprocess.run([str(py), str(script), str(results_dir / "report.json"), str(results_dir / "charts")],
                       capture_output=True, text=True, env=dict(os.environ, MPLBACKEND="Agg"))
    if p.returncode != 0:
        lines = [ln for ln in p.stderr.strip().splitlines() if ln.strip()]
        raise RuntimeError(f"report_charts.py failed: {lines[-1] if lines else p.returncode}")
    return [line.strip() for line in p.stdout.splitlines() if line.strip().endswith(".png")]
