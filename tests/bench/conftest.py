"""Fixtures of the bench/compare smoke test: one quick run against Sundial and InfluxDB 1.x for the session."""

import datetime
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench" / "lib"))
import sundial_server  # noqa: E402

# The timed query runs sized to this many seconds at their 1-worker pace (`--query-run-seconds`): a few to a
# few dozen queries each at this size, so that the sizing is exercised with the real runners.
QUERY_RUN_SECONDS = 0.05

# The smallest run that still has every query type: TSBS needs 12 h of data for the double-groupby windows.
# Two load runs per database (`--load-runs`), seconds each at this size.
QUICK_ARGS = ["--profile", "quick", "--peers", "sundial,influxdb", "--scenarios", "1", "--scale", "10",
              "--duration", str(13 * 3600), "--queries-per-type", "3", "--check-queries", "2", "--settle", "12",
              "--step-timeout", "300", "--load-runs", "2", "--query-run-seconds", str(QUERY_RUN_SECONDS)]


class QuickRun:
    def __init__(self, results_dir, proc, output, seconds):
        self.results_dir, self.returncode, self.output, self.seconds = results_dir, proc.returncode, output, seconds
        self.ended_at = datetime.datetime.now(datetime.timezone.utc)
        self.pid = proc.pid


@pytest.fixture(scope="session")
def quick_run(tmp_path_factory):
    results = tmp_path_factory.mktemp("compare") / "results"
    argv = [sys.executable, str(ROOT / "bench" / "compare"), *QUICK_ARGS, "--results-dir", str(results)]
    # $SUNDIAL_BIN (scripts/test sets it to the debug build), else the release build, else the debug build.
    env = dict(os.environ, SUNDIAL_BIN=str(sundial_server.find_binary(allow_debug=True)))
    t0 = time.monotonic()
    proc = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        out, _ = proc.communicate(timeout=900)
    except subprocess.TimeoutExpired:
        proc.terminate()  # bench/compare stops its servers on SIGTERM
        out, _ = proc.communicate(timeout=120)
        pytest.fail(f"bench/compare did not finish in 900 s:\n{out[-5000:]}")
    return QuickRun(results, proc, out, time.monotonic() - t0)
