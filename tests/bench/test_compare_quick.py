"""bench/compare --profile quick, at the smallest size, against Sundial and InfluxDB 1.x: the report is made,
every row is committed and counted, and Sundial's answers equal InfluxDB's. (Timings of a debug build mean
nothing; this checks the harness, not the figures. The other peers are not run in CI.)"""

import csv
import datetime as dt
import json
import os
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench" / "lib"))
import procutil  # noqa: E402


def test_run_succeeds(quick_run):
    assert quick_run.returncode == 0, quick_run.output[-5000:]


def test_report_files_and_tables(quick_run):
    d = quick_run.results_dir
    for name in ("REPORT.md", "summary.csv", "queries.csv", "crosscheck.csv", "report.json",
                 "raw/s1-sundial.json", "raw/s1-influxdb.json"):
        assert (d / name).is_file(), f"{name} missing; output:\n{quick_run.output[-3000:]}"
    md = (d / "REPORT.md").read_text()
    for heading in ("## Scenarios", "## Databases", "## Ingest", "Ratio Sundial / peer", "## Resources during the load",
                    "## Disk", "## Query latency, scenario 1, 1 worker(s)", "## Query latency, scenario 1, 8 worker(s)",
                    "## Answer cross-check", "## Targets (issue 7)", "## Published context"):
        assert heading in md, f"no `{heading}` in REPORT.md"
    assert "debug build" in md or "release build" in md
    charts = {p.name for p in (d / "charts").glob("*.png")}
    assert {"ingest.png", "disk.png", "queries-s1-w1.png", "queries-s1-w8.png", "load-s1.png"} <= charts, charts


def test_every_row_committed_and_counted(quick_run):
    rep = json.loads((quick_run.results_dir / "report.json").read_text())
    pairs = {p["peer"]: p for p in rep["pairs"]}
    assert set(pairs) == {"sundial", "influxdb"}
    for name, p in pairs.items():
        assert p["ok"], f"{name}: {p['error']}"
        assert p["counted_rows"] == p["rows"] == 10 * 13 * 360, (name, p["counted_rows"], p["rows"])
        assert p["committed_rows_per_s"] > 0 and p["server_cpu_s"] is not None
        assert p["server_peak_mem_bytes"] > 0 and p["disk_after_settle_bytes"] > 0 and p["bytes_per_value"] > 0


def test_each_database_loaded_as_often_as_asked(quick_run):
    """--load-runs 2: a pair's raw result lists both runs, in order, each with every row committed; its load
    figures are the slower run's (the lower middle of two), and the report shows every run."""
    for peer in ("sundial", "influxdb"):
        raw = json.loads((quick_run.results_dir / f"raw/s1-{peer}.json").read_text())
        runs = raw["load_runs"]
        assert [r["run"] for r in runs] == [1, 2], runs
        assert all(r["all_rows_committed"] and r["committed_rows_per_s"] > 0 for r in runs), runs
        ld = raw["load"]
        assert ld["median_of_runs"] == 2 and ld["counted_rows"] == 10 * 13 * 360
        assert ld["committed_rows_per_s"] == min(r["committed_rows_per_s"] for r in runs), (ld, runs)
        assert [r for r in runs if r["run"] == ld["run"]][0]["server_cpu_s"] == ld["server_cpu_s"]
        assert len(ld["loadavg_at_start"]) == 3, "the load average kept per load"
    md = (quick_run.results_dir / "REPORT.md").read_text()
    assert "each run's committed rows/s (median in bold)" in md
    # The extra runs' servers and data directories are removed once they are done (no run failed).
    left = list((procutil.cache_dir() / "scratch").glob(f"compare-*-run*-{quick_run.pid}"))
    assert not left, left


def test_queries_ran_for_every_type(quick_run):
    with open(quick_run.results_dir / "queries.csv") as f:
        rows = list(csv.DictReader(f))
    for peer in ("sundial", "influxdb"):
        for workers in ("1", "8"):
            got = {r["query_type"]: r for r in rows if r["peer"] == peer and r["workers"] == workers}
            assert len(got) == 15, (peer, workers, sorted(got))
            bad = {t: r["status"] for t, r in got.items() if r["status"] != "ok" or not r["mean_ms"]}
            assert not bad, (peer, workers, bad)


def test_each_timed_run_has_its_own_queries(quick_run):
    """The cross-check's answers come from the queries of --seed, each timed run from its own seed, so that a
    response cache cannot answer one run from the one before (bench/compare run_queries)."""
    seeds_of = {}
    for peer in ("sundial", "influxdb"):
        raw = json.loads((quick_run.results_dir / f"raw/s1-{peer}.json").read_text())
        for c in raw["commands"]:
            if "tsbs_run_queries" not in c:
                continue
            purpose = "answers" if "--print-responses" in c else "workers=" + re.search(r"--workers=(\d+)", c).group(1)
            seed = re.search(r"--file=\S*-seed(\d+)-n\d+", c).group(1)
            seeds_of.setdefault((peer, purpose), set()).add(seed)
    for peer in ("sundial", "influxdb"):
        assert seeds_of[(peer, "answers")] == {"123"}, seeds_of
        assert seeds_of[(peer, "workers=1")] == {"124"}, seeds_of
        assert seeds_of[(peer, "workers=8")] == {"125"}, seeds_of


def test_query_runs_sized_by_the_one_worker_pace(quick_run):
    """--query-run-seconds: each timed run asks as many queries as fit in that time at its type's 1-worker mean (at
    least --queries-per-type, at most QUERIES_PER_RUN_MAX): the 1-worker run at the pace of a first run of
    --queries-per-type (its `probe`), run again when that gives more; the 8-worker run at the 1-worker run's."""
    from test_compare_disk import load_compare

    most = load_compare().QUERIES_PER_RUN_MAX
    lengthened = 0
    for peer in ("sundial", "influxdb"):
        raw = json.loads((quick_run.results_dir / f"raw/s1-{peer}.json").read_text())
        # As the run was told (conftest.QUICK_ARGS); the suite's other conftest modules share that name.
        secs, least = raw["config"]["query_run_seconds"], raw["config"]["queries_per_type"]
        assert (secs, least) == (0.05, 3), raw["config"]
        size = lambda mean: max(least, min(most, int(secs * 1000 / mean)))
        q = raw["queries"]
        for qtype, one in q["1"].items():
            probe = one.get("probe")
            if probe is None:
                assert one["queries"] == 3, (peer, qtype, one)
            else:
                assert probe["queries"] == 3 and one["queries"] == size(probe["mean_ms"]) > 3, (peer, qtype, one)
            want = size(one["mean_ms"])
            assert q["8"][qtype]["queries"] == want, (peer, qtype, one["mean_ms"], q["8"][qtype])
            lengthened += (probe is not None) + (want > 3)
    assert lengthened, "no run was lengthened: the sizing was not exercised"


def test_answers_cross_checked_without_mismatch(quick_run):
    rep = json.loads((quick_run.results_dir / "report.json").read_text())
    assert rep["crosscheck_mismatches"] == 0
    checks = rep["crosscheck"]["1"]
    assert len(checks) == 15
    for qtype, entry in checks.items():
        assert entry["reference"] == "influxdb", (qtype, entry)
        assert entry["sundial"][0] == "ok", (qtype, entry["sundial"])


def test_leaves_nothing_running(quick_run):
    """No process started by the run is left: servers and clients ran with its pid in their scratch paths."""
    tag = f"-{quick_run.pid}/"
    left = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if tag in cmd:
            left.append(f"{pid}: {cmd}")
    assert not left, left


def test_finishes_in_time(quick_run):
    """The measured part of the run (from the first pair's start to the report) takes minutes. Installing
    the peers and TSBS comes before it and is not counted: on a fresh machine that alone is several minutes
    of apt and Go builds (321 s in all once, of which the pairs and report took under a minute)."""
    raw = sorted((quick_run.results_dir / "raw").glob("*.json"))
    starts = [dt.datetime.fromisoformat(json.loads(f.read_text())["started_at"]) for f in raw]
    assert starts, f"no pair ran; output:\n{quick_run.output[-3000:]}"
    measured = (quick_run.ended_at - min(starts)).total_seconds()
    assert 0 < measured < 240, \
        f"the quick smoke run's pairs and report took {measured:.0f} s ({quick_run.seconds:.0f} s with installs)"
