"""Answers of the TSBS query runners (`--print-responses`), normalised so that different databases can be compared.

Each runner prints its answers in its own shape:
- influx, questdb: JSON objects whose lines after the first carry an `ID n: ` prefix, on stdout
  (`{"influxql": <query>, "response": <the server's JSON>}`);
- timescaledb, clickhouse: `{"query": <sql>, "results": [{column: value}, …]}` on stdout (column order lost);
- victoriametrics: the Prometheus JSON, on stderr (not compared: PromQL windows differ, see peers_victoriametrics).

Normal form of an answer: a sorted list of rows, each row `(time_ns or None, host names, numbers)`, where
- time is the value of a `time`/`timestamp`/bucket column (RFC 3339 string or epoch), in nanoseconds;
- host names are the `hostname` values (from a column, or InfluxDB's series tags);
- numbers are the other numeric values, sorted (SQL maps lose the column order), nulls dropped;
- other tag columns (region, rack, …) and storage ids (tags_id, additional_tags) are dropped;
- rows whose numbers are all null (InfluxDB's empty GROUP BY time buckets, which SQL does not emit) are dropped.
When one side has no host names at all (SQL `SELECT *` returns tags_id, not hostname), both are compared
without them. Numbers are equal within 1e-6 (relative, absolute below 1).
"""

import datetime as dt
import json
import math
import re

TAG_COLUMNS = {"region", "datacenter", "rack", "os", "arch", "team", "service", "service_version",
               "service_environment", "tags_id", "additional_tags", "id", "tags", "name"}
TIME_COLUMNS = {"time", "timestamp", "ts", "bucket", "created_at", "minute", "hour"}  # ClickHouse: created_at
ISO = re.compile(r"^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}")
PREFIX = re.compile(r"^ID \d+: ", re.M)
REL_TOL = 1e-6
ROW_INTERVAL_NS = 10 * 10**9  # TSBS cpu-only: one row per host every 10 s, on the 10 s grid


def parse_printed(text: str):
    """The JSON objects a runner printed with --print-responses, in order (each starts a line with `{`),
    one at a time: at 4,000 hosts one high-cpu-all answer is millions of rows, and holding all of a type's
    answers parsed at once took the harness past 10 GB, evicting the page cache the databases read from."""
    text = PREFIX.sub("", text)
    dec, pos = json.JSONDecoder(), 0
    for m in re.finditer(r"^\{", text, re.M):
        if m.start() < pos:
            continue
        try:
            obj, pos = dec.raw_decode(text, m.start())
        except ValueError:
            continue
        if isinstance(obj, dict):
            yield obj


def _time_ns(v):
    if isinstance(v, str) and ISO.match(v):
        s = v.replace(" ", "T", 1)
        frac = 0
        m = re.match(r"^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(\.\d+)? ?(Z|[+-]\d{2}:?\d{2})?$", s)
        if not m:
            return None
        base = dt.datetime.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S")
        if m.group(2):
            frac = int((m.group(2)[1:] + "000000000")[:9])
        tz = m.group(3) or "Z"
        off = 0 if tz == "Z" else (1 if tz[0] == "+" else -1) * (int(tz[1:3]) * 3600 + int(tz[-2:]) * 60)
        secs = int(base.replace(tzinfo=dt.timezone.utc).timestamp()) - off
        return secs * 1_000_000_000 + frac
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        v = int(v)
        return v if v > 10**15 else v * 1_000_000_000  # ns or s
    return None


def _num(v):
    if isinstance(v, bool) or v is None:
        return None
    if isinstance(v, (int, float)):
        return float(v)
    if isinstance(v, str):
        try:
            return float(v)
        except ValueError:
            return None
    return None


def _row(pairs, extra_hosts=()):
    """(time_ns, hosts, numbers) from (column, value) pairs; None for an all-null row."""
    t, hosts, nums, had_value = None, list(extra_hosts), [], False
    for col, v in pairs:
        c = col.lower()
        if c in TIME_COLUMNS or (t is None and isinstance(v, str) and ISO.match(v)):
            t = _time_ns(v)
            continue
        if c == "hostname":
            if v is not None:
                hosts.append(str(v))
            continue
        if c in TAG_COLUMNS:
            continue
        n = _num(v)
        if n is not None:
            nums.append(n)
            had_value = True
    if not had_value and t is not None:
        return None
    return (t, tuple(sorted(hosts)), tuple(sorted(nums)))


def normalise(fmt: str, obj: dict):
    """(query text, sorted rows) of one printed answer of a runner of TSBS format `fmt`."""
    rows = []
    if fmt in ("influx", "questdb"):
        q, resp = obj.get("influxql", ""), obj.get("response")
        if fmt == "influx":
            for res in (resp or {}).get("results", []) or []:
                for s in res.get("series", []) or []:
                    hosts = [v for k, v in (s.get("tags") or {}).items() if k == "hostname"]
                    for vals in s.get("values", []) or []:
                        rows.append(_row(zip(s["columns"], vals), hosts))
        else:
            cols = [c["name"] for c in (resp or {}).get("columns", [])]
            for vals in (resp or {}).get("dataset", []) or []:
                rows.append(_row(zip(cols, vals)))
    else:
        q = obj.get("query", "")
        for r in obj.get("results") or []:
            rows.append(_row(sorted(r.items())))
    rows = [r for r in rows if r is not None]
    return q, sorted(rows, key=_sort_key)


def _sort_key(r):
    return (r[0] if r[0] is not None else -1, r[1], tuple(float(f"{x:.6g}") for x in r[2]))


def question(query: str):
    """What a query asks, as far as the cross-check needs: its host names, and each time bound as the first data
    timestamp at or after it (TSBS cpu-only rows are 10 s apart). TSBS's generators for different formats draw
    hosts and windows in different orders for some types (high-cpu: window then hosts for InfluxQL, hosts then
    window for SQL), and print bounds to the second (InfluxQL, QuestDB) or to the microsecond (PostgreSQL): the
    same seed can then ask another question (`time >= …:50Z` holds the row at :50, `>= …:50.3` does not).
    Such answers are not compared."""
    hosts = tuple(sorted(set(re.findall(r"host_\d+", query))))
    step = ROW_INTERVAL_NS
    times = []
    for m in re.finditer(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(\.\d+)?( ?(Z|[+-]\d{2}:?\d{2}))?", query):
        t = _time_ns(m.group(0) if m.group(2) else m.group(0) + "Z")
        if t is not None:
            times.append(-(-t // step) * step)
    return hosts, tuple(sorted(times))


# Where TSBS's own queries ask different questions of different formats (not a database's wrong answer).
TSBS_DEFINITION_DIFFERENCES = {
    ("groupby-orderby-limit", "ASC", "DESC"):
        "TSBS's InfluxQL and QuestDB queries have no ORDER BY time DESC (the earliest 5 minutes), its SQL for "
        "PostgreSQL/ClickHouse orders DESC (the latest 5 minutes)",
}
ORDER_DESC_FORMATS = {"timescaledb", "clickhouse"}


def definition_difference(qtype: str, fmt_a: str, fmt_b: str):
    """The explanation when TSBS's queries of `qtype` for these two formats ask different questions."""
    oa = "DESC" if fmt_a in ORDER_DESC_FORMATS else "ASC"
    ob = "DESC" if fmt_b in ORDER_DESC_FORMATS else "ASC"
    if oa == ob:
        return None
    return TSBS_DEFINITION_DIFFERENCES.get((qtype, *sorted((oa, ob))))


def _close(a, b):
    return math.isclose(a, b, rel_tol=REL_TOL, abs_tol=REL_TOL)


def compare(ref_rows, rows) -> str:
    """None when equal, else what differs first (for the report)."""
    with_hosts = any(r[1] for r in ref_rows) and any(r[1] for r in rows)
    if not with_hosts:
        ref_rows = sorted(((t, (), n) for t, _h, n in ref_rows), key=_sort_key)
        rows = sorted(((t, (), n) for t, _h, n in rows), key=_sort_key)
    if len(ref_rows) != len(rows):
        return f"{len(ref_rows)} rows vs {len(rows)}"
    for i, (a, b) in enumerate(zip(ref_rows, rows)):
        if a[0] != b[0]:
            return f"row {i}: time {a[0]} vs {b[0]}"
        if a[1] != b[1]:
            return f"row {i}: hosts {list(a[1])} vs {list(b[1])}"
        if len(a[2]) != len(b[2]):
            return f"row {i}: {len(a[2])} values vs {len(b[2])} ({list(a[2])[:6]} vs {list(b[2])[:6]})"
        for x, y in zip(a[2], b[2]):
            if not _close(x, y):
                return f"row {i}: value {x} vs {y}"
    return None
