"""The data set, the servers and the request pair of the InfluxQL differential test.

Data, identical on both servers:
- database `benchmark`: TSBS cpu-only, scale 10 × 13 h, seed 123 (46,800 rows; ≥ 12 h so that every query
  type can be generated), posted as line protocol in batches of 10,000 lines; plus small hand-made
  measurements after the TSBS data (`sparse`, `other`, `prec`, `dup`, see EDGE_WRITES) for the edge cases;
- database `compat_writes`: empty; the write tests put one measurement each into it.
Queries: 3 per TSBS cpu-only type, from tsbs_generate_queries, decoded from its gob file with
bench/lib/tsbs_dump_queries.go (exact: TSBS's own type, no server needed).
"""

import dataclasses
import os
import shutil
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench" / "lib"))

import httpapi  # noqa: E402
import peers_influxdb  # noqa: E402
import sundial_server  # noqa: E402
import tsbs_tools  # noqa: E402
from influx_compare import Diff, compare, explain  # noqa: E402

DB = "benchmark"
WRITES_DB = "compat_writes"
SCALE, HOURS, SEED, START = 10, 13, 123, "2016-01-01T00:00:00Z"
QUERIES_PER_TYPE = 3
T0_S = 1451692800  # 2016-01-02T00:00:00Z: the hand-made points start 11 h after the TSBS data ends


def ns(seconds: int, extra_ns: int = 0) -> int:
    """Nanosecond timestamp `seconds` (+ `extra_ns`) after T0."""
    return (T0_S + seconds) * 1_000_000_000 + extra_ns


def t(seconds: float) -> str:
    """RFC3339 literal for T0 + seconds (whole or .5 seconds), for WHERE clauses."""
    whole, frac = divmod(seconds, 1)
    hh, rem = divmod(int(whole), 3600)
    mm, ss = divmod(rem, 60)
    return f"'2016-01-02T{hh:02d}:{mm:02d}:{ss:02d}{'.5' if frac else ''}Z'"


# (database, precision, body): written in this order to both servers after the TSBS data.
EDGE_WRITES = [
    (DB, None, "\n".join([
        # host a: points at 0 s, 2.5 s, 30 s, 125 s, 400 s, 400.5 s; minutes 3-5 empty
        f'sparse,host=a,region=east v=1.5,n=1i,s="x",flag=true {ns(0)}',
        f"sparse,host=a,region=east v=2.5,n=2i {ns(2, 500_000_000)}",
        f"sparse,host=a,region=east v=3,n=3i {ns(30)}",
        f"sparse,host=a,region=east v=-1,n=-4i {ns(125)}",
        f'sparse,host=a,region=east v=10,n=10i,s="y",flag=false {ns(400)}',
        f"sparse,host=a,region=east v=11.25,n=11i {ns(400, 500_000_000)}",
        # host b: a burst in minute 1 and one point at 300 s
        f"sparse,host=b,region=east v=4,n=4i {ns(60)}",
        f"sparse,host=b,region=east v=5,n=5i {ns(61)}",
        f'sparse,host=b,region=east v=6,n=6i,s="q" {ns(300)}',
        # host c: two points 1 ns apart, then a row with only a string field
        f'sparse,host=c,region=west v=100,n=100i,s="z" {ns(200)}',
        f"sparse,host=c,region=west v=101.5,n=101i {ns(200, 1)}",
        f'sparse,host=c,region=west s="only-string" {ns(500)}',
        # host d carries a tag no other series has; same time as host b's first point
        f"sparse,host=d,region=west,extra=yes v=7 {ns(60)}",
        f"other,host=a value=1 {ns(0)}",
        f"other,host=a value=2 {ns(3600)}",
    ]) + "\n"),
    (DB, "s", f"prec,host=a v=1 {T0_S}\n"),
    (DB, "ms", f"prec,host=a v=2 {T0_S * 1000 + 1500}\n"),
    (DB, "u", f"prec,host=a v=3 {T0_S * 1_000_000 + 2_000_001}\n"),
    # same series and time twice: InfluxDB keeps the last value of each field and merges the fields
    (DB, None, f"dup,host=a v=1,w=1 {ns(0)}\n"),
    (DB, None, f"dup,host=a v=2 {ns(0)}\n"),
]


@dataclasses.dataclass
class Inputs:
    data_file: Path
    expected_rows: int
    queries: dict  # query type -> list of dicts (label, influxql, path, …)


def ensure_inputs(log=print) -> Inputs:
    """TSBS installed, the data file and the query files generated (all cached in $SUNDIAL_CACHE/tsbs)."""
    tsbs_tools.ensure_installed(log)
    start, end = tsbs_tools.data_range(START, HOURS)
    data_file = tsbs_tools.ensure_data_file(SCALE, start, end, SEED, log)
    queries = {}
    for qtype in tsbs_tools.QUERY_TYPES:
        path, _ = tsbs_tools.ensure_query_file(qtype, SCALE, start, tsbs_tools.query_end(end), SEED,
                                               QUERIES_PER_TYPE, log)
        queries[qtype] = tsbs_tools.dump_queries(path)
    return Inputs(data_file, tsbs_tools.expected_rows(SCALE, start, end), queries)


def reference_only() -> bool:
    return os.environ.get("SUNDIAL_COMPAT_REFERENCE_ONLY") == "1"


def start_reference(root: Path):
    peers_influxdb.ensure_installed()
    return peers_influxdb.InfluxDB(root).start()


def start_candidate(root: Path):
    """Sundial (SUNDIAL_BIN or the default build path), or a second InfluxDB if SUNDIAL_COMPAT_REFERENCE_ONLY=1."""
    if reference_only():
        return start_reference(root)
    return sundial_server.Sundial(root, sundial_server.find_binary(allow_debug=True)).start()


def prepare(url: str, inputs: Inputs):
    """Create the databases and load everything; wait until the count query sees every TSBS row."""
    for db in (DB, WRITES_DB):
        httpapi.create_database(url, db)
    httpapi.write_file_in_batches(url, DB, inputs.data_file, 10_000)
    for db, precision, body in EDGE_WRITES:
        r = httpapi.write(url, db, body.encode(), precision=precision)
        if r.status != 204:
            raise RuntimeError(f"edge-case write to {url} ({precision=}): {r.status} {r.body[:300]!r}\n{body}")
    deadline = time.monotonic() + 60
    while (n := httpapi.count_rows(url, DB)) != inputs.expected_rows:
        if time.monotonic() > deadline:
            raise RuntimeError(f"{url}: count(usage_user) = {n}, expected {inputs.expected_rows}")
        time.sleep(0.2)


class Pair:
    """The reference InfluxDB and the candidate: send a request to both, compare, fail with a readable diff."""

    def __init__(self, reference, candidate, strict_tie_order=False):
        self.reference, self.candidate, self.strict_tie_order = reference, candidate, strict_tie_order

    def send(self, method, path, params=None, body=None, headers=None):
        return tuple(httpapi.request(method, s.url, path, params, body, headers, timeout=120)
                     for s in (self.reference, self.candidate))

    def check(self, method, path, params=None, body=None, headers=None, describe=None):
        """Send to both; raise AssertionError with the diff if the answers differ. Returns both answers."""
        ref, got = self.send(method, path, params, body, headers)
        try:
            compare(ref.status, ref.json(), got.status, got.json(), self.strict_tie_order)
        except Diff as d:
            shown = describe or f"{method} {path}" + (f" {params}" if params else "")
            raise AssertionError(explain(d, shown, ref, got)) from None
        return ref, got

    def stop(self):
        for s in (self.candidate, self.reference):
            if s is not None:
                s.stop()


def start_pair(root: Path, inputs: Inputs, strict_tie_order=False) -> Pair:
    ref = cand = None
    try:
        ref = start_reference(root / "reference")
        cand = start_candidate(root / "candidate")
        for s in (ref, cand):
            prepare(s.url, inputs)
        return Pair(ref, cand, strict_tie_order)
    except BaseException:
        Pair(ref, cand).stop()
        raise


def remove(root: Path):
    shutil.rmtree(root, ignore_errors=True)
