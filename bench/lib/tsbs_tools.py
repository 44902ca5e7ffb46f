"""TSBS at a pinned revision: install, generate cpu-only data and queries, decode query files.

Install recipe from /work/shared/README.md (`go install …@latest` is refused by the module proxy, so a wrapper
module pins the revision; `godebug randseednop=0` is required or Go >= 1.24 ignores `--seed`).
Everything lives in `$SUNDIAL_CACHE/tsbs/` (bin/, tsbswrap/, data/, queries/).
"""

import contextlib
import datetime as dt
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
from pathlib import Path

from procutil import cache_dir, cmd_str

TSBS_MODULE = "github.com/timescale/tsbs"
TSBS_REV = "v0.0.0-20230921131859-37fced794d56"
TOOLS = ["tsbs_generate_data", "tsbs_generate_queries", "tsbs_load_influx", "tsbs_run_queries_influx"]
DUMPER = "tsbs_dump_queries"
DUMPER_SRC = Path(__file__).with_name("tsbs_dump_queries.go")

# The 15 cpu-only query types, in the order TSBS's docs list them.
QUERY_TYPES = [
    "single-groupby-1-1-1", "single-groupby-1-1-12", "single-groupby-1-8-1",
    "single-groupby-5-1-1", "single-groupby-5-1-12", "single-groupby-5-8-1",
    "cpu-max-all-1", "cpu-max-all-8",
    "double-groupby-1", "double-groupby-5", "double-groupby-all",
    "high-cpu-1", "high-cpu-all",
    "lastpoint", "groupby-orderby-limit",
]
ROW_INTERVAL_S = 10  # cpu-only: one row per host every 10 s
FIELDS_PER_ROW = 10
LP_BYTES_PER_ROW = 345  # measured average size of one cpu-only line


def tsbs_dir() -> Path:
    return cache_dir() / "tsbs"


def bin_path(tool: str) -> Path:
    return tsbs_dir() / "bin" / tool


@contextlib.contextmanager
def _lock(name: str):
    """An exclusive file lock, so a benchmark and a test run can install or generate side by side."""
    tsbs_dir().mkdir(parents=True, exist_ok=True)
    with open(tsbs_dir() / f".{name}.lock", "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        yield


def _go_env():
    return dict(os.environ, GOFLAGS="-mod=mod", GOBIN=str(tsbs_dir() / "bin"))


def ensure_installed(log=print) -> Path:
    """Install the four TSBS tools and the query-file dumper if missing; return the bin dir."""
    wrap = tsbs_dir() / "tsbswrap"
    tools_stamp = tsbs_dir() / "bin" / ".tools-stamp"
    dumper_stamp = tsbs_dir() / "bin" / ".dumper-stamp"
    dumper_hash = hashlib.sha256(DUMPER_SRC.read_bytes()).hexdigest()
    with _lock("install"):
        tools_ok = all(bin_path(t).is_file() for t in TOOLS) and _read(tools_stamp) == TSBS_REV
        dumper_ok = bin_path(DUMPER).is_file() and _read(dumper_stamp) == f"{TSBS_REV} {dumper_hash}"
        if tools_ok and dumper_ok:
            return tsbs_dir() / "bin"
        if shutil.which("go") is None:
            raise RuntimeError("TSBS needs Go (`go` not on PATH)")
        wrap.mkdir(parents=True, exist_ok=True)

        def go(*args):
            argv = ["nice", "-n", "10", "go", *args]
            log(f"  $ (cd {wrap} && {cmd_str(argv)})")
            subprocess.run(argv, cwd=wrap, env=_go_env(), check=True)

        if not tools_ok:
            log(f"installing TSBS {TSBS_REV} into {tsbs_dir()} (about a minute the first time)")
            if not (wrap / "go.mod").exists():
                go("mod", "init", "tsbswrap")
            go("get", f"{TSBS_MODULE}@{TSBS_REV}")
            go("mod", "edit", "-godebug=randseednop=0")  # else Go >= 1.24 ignores --seed
            for t in TOOLS:
                go("install", f"{TSBS_MODULE}/cmd/{t}")
            tools_stamp.write_text(TSBS_REV)
        if not dumper_ok:
            (wrap / "dumpq").mkdir(exist_ok=True)
            shutil.copy(DUMPER_SRC, wrap / "dumpq" / "main.go")
            go("build", "-o", str(bin_path(DUMPER)), "./dumpq")
            dumper_stamp.write_text(f"{TSBS_REV} {dumper_hash}")
    return tsbs_dir() / "bin"


def ensure_tools(tools, log=print) -> Path:
    """Install more TSBS tools of the same pinned module (the peers' loaders and runners) if missing."""
    ensure_installed(log)
    wrap = tsbs_dir() / "tsbswrap"
    with _lock("install"):
        for t in tools:
            if not bin_path(t).is_file():
                argv = ["nice", "-n", "10", "go", "install", f"{TSBS_MODULE}/cmd/{t}"]
                log(f"  $ (cd {wrap} && {cmd_str(argv)})")
                subprocess.run(argv, cwd=wrap, env=_go_env(), check=True)
    return tsbs_dir() / "bin"


def _read(p: Path) -> str:
    try:
        return p.read_text().strip()
    except OSError:
        return ""


# ---------------------------------------------------------------- time ranges

def rfc3339(t: dt.datetime) -> str:
    return t.astimezone(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_rfc3339(s: str) -> dt.datetime:
    return dt.datetime.strptime(s, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=dt.timezone.utc)


def data_range(start: str, hours: float):
    """(start, end) RFC3339 strings of a data set `hours` long; end is exclusive. Whole seconds only."""
    t0 = parse_rfc3339(start)
    seconds = round(hours * 3600)
    if seconds % ROW_INTERVAL_S:
        raise ValueError(f"the data span must be a multiple of {ROW_INTERVAL_S} s, got {seconds} s")
    return start, rfc3339(t0 + dt.timedelta(seconds=seconds))


def query_end(data_end: str) -> str:
    """Queries are generated with end = data end + 1 s (else the 12 h windows of double-groupby do not fit)."""
    return rfc3339(parse_rfc3339(data_end) + dt.timedelta(seconds=1))


def expected_rows(scale: int, start: str, end: str) -> int:
    seconds = (parse_rfc3339(end) - parse_rfc3339(start)).total_seconds()
    return scale * int(seconds // ROW_INTERVAL_S)


# ---------------------------------------------------------------- data

def data_argv(scale: int, start: str, end: str, seed: int, file=None, fmt: str = "influx"):
    argv = [bin_path("tsbs_generate_data"), "--use-case=cpu-only", f"--seed={seed}", f"--scale={scale}",
            f"--timestamp-start={start}", f"--timestamp-end={end}", "--log-interval=10s", f"--format={fmt}"]
    return argv + ([f"--file={file}"] if file else [])


# Formats whose files TSBS writes byte for byte like another's (its victoriametrics target serializes line
# protocol, its clickhouse target TimescaleDB's format: checked by tests/bench/test_tsbs_formats.py). They share
# one cached file, which at scenario 2's size is 5.6 GB that would not fit beside every peer's.
SAME_BYTES_AS = {"victoriametrics": "influx", "clickhouse": "timescaledb"}


def data_file_path(scale: int, start: str, end: str, seed: int, fmt: str = "influx") -> Path:
    fmt = SAME_BYTES_AS.get(fmt, fmt)
    tag = f"cpu-only-s{scale}-{start}-{end}-seed{seed}".replace(":", "")
    return tsbs_dir() / "data" / (f"{tag}.influx.lp" if fmt == "influx" else f"{tag}.{fmt}.dat")


def ensure_data_file(scale: int, start: str, end: str, seed: int, log=print, fmt: str = "influx") -> Path:
    """Generate the data file of TSBS format `fmt` once (cached by scale/range/seed; formats of the same bytes
    share one file, named by `data_file_path`); return its path."""
    path = data_file_path(scale, start, end, seed, fmt)
    with _lock("data"):
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(".tmp")
            argv = data_argv(scale, start, end, seed, file=tmp, fmt=fmt)
            log(f"generating data: {cmd_str(argv)}")
            subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            tmp.rename(path)
    return path


# ---------------------------------------------------------------- queries

def queries_argv(qtype: str, scale: int, start: str, end: str, seed: int, n: int, file, fmt: str = "influx"):
    return [bin_path("tsbs_generate_queries"), "--use-case=cpu-only", f"--seed={seed}", f"--scale={scale}",
            f"--timestamp-start={start}", f"--timestamp-end={end}", f"--queries={n}",
            f"--query-type={qtype}", f"--format={fmt}", f"--file={file}"]


def ensure_query_file(qtype: str, scale: int, start: str, end: str, seed: int, n: int, log=print,
                      fmt: str = "influx", post_process=None):
    """Generate (cached) `n` queries of `qtype` in TSBS format `fmt` over [start, end); return (path, argv).
    `post_process(tmp_path)` may rewrite the fresh file before it is renamed into the cache.

    Raises RuntimeError with the generator's message when the type cannot be generated (e.g. a window longer
    than the data, or a type the format does not implement)."""
    tag = f"{qtype}-s{scale}-{start}-{end}-seed{seed}-n{n}".replace(":", "")
    path = tsbs_dir() / "queries" / (f"{tag}.gob" if fmt == "influx" else f"{tag}.{fmt}.gob")
    argv = queries_argv(qtype, scale, start, end, seed, n, path.with_suffix(".tmp"), fmt)
    with _lock("queries"):
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            p = subprocess.run(argv, capture_output=True, text=True)
            if p.returncode != 0:
                path.with_suffix(".tmp").unlink(missing_ok=True)
                msg = (p.stderr or p.stdout).strip().splitlines()
                why = next((m for m in msg if m.startswith("panic:") or "rror" in m), msg[-1] if msg else "")
                raise RuntimeError(f"tsbs_generate_queries {qtype}: {why or p.returncode}")
            if post_process is not None:
                post_process(path.with_suffix(".tmp"))
            path.with_suffix(".tmp").rename(path)
    return path, argv[:-1] + [f"--file={path}"]


def dump_queries(gob_path) -> list:
    """The queries of a TSBS influx query file: dicts with label, description, method, path, influxql."""
    with open(gob_path, "rb") as f:
        p = subprocess.run([bin_path(DUMPER)], stdin=f, capture_output=True, text=True, check=True)
    return [json.loads(line) for line in p.stdout.splitlines()]
