"""InfluxQL differential test: every request goes to real InfluxDB 1.x and to the candidate (Sundial, or a second
InfluxDB with SUNDIAL_COMPAT_REFERENCE_ONLY=1), and the answers must be equal by the rules of
influx_compare.py. One test case per request, so a report names exactly what differs. See README.md here.
"""

import gzip

import pytest

from compat_data import DB, QUERIES_PER_TYPE, WRITES_DB, ns, t
from tsbs_tools import QUERY_TYPES

# ---------------------------------------------------------------- the 15 TSBS cpu-only query types

TSBS_CASES = [pytest.param(qt, i, None, id=f"{qt}-{i}") for qt in QUERY_TYPES for i in range(QUERIES_PER_TYPE)]
TSBS_CASES += [pytest.param(qt, 0, "ns", id=f"{qt}-0-epoch-ns") for qt in QUERY_TYPES]


@pytest.mark.parametrize("qtype,index,epoch", TSBS_CASES)
def test_tsbs_query(pair, compat_inputs, qtype, index, epoch):
    """Sent exactly as tsbs_run_queries_influx sends it: POST <generated path>&db=benchmark, empty body."""
    q = compat_inputs.queries[qtype][index]
    path = q["path"] + f"&db={DB}" + (f"&epoch={epoch}" if epoch else "")
    pair.check("POST", path, body=b"", describe=f"POST {path}\nInfluxQL: {q['influxql']}")


# ---------------------------------------------------------------- hand-written InfluxQL edge cases
# Data: compat_data.EDGE_WRITES. T0 = 2016-01-02T00:00:00Z; t(s) is the literal for T0 + s.

W10 = f"time >= {t(0)} AND time < {t(600)}"  # a 10-minute window over the sparse data

EDGE = [
    # --- empty buckets and fill()
    ("fill-null-default", f"SELECT mean(v) FROM sparse WHERE {W10} GROUP BY time(1m)"),
    ("fill-null-by-host", f"SELECT mean(v) FROM sparse WHERE {W10} GROUP BY time(1m), host"),
    ("fill-null-explicit", f"SELECT mean(v) FROM sparse WHERE {W10} GROUP BY time(1m) fill(null)"),
    ("fill-none", f"SELECT mean(v) FROM sparse WHERE {W10} GROUP BY time(1m) fill(none)"),
    ("fill-previous", f"SELECT mean(v) FROM sparse WHERE {W10} GROUP BY time(1m) fill(previous)"),
    ("fill-previous-by-host", f"SELECT max(v) FROM sparse WHERE {W10} GROUP BY time(1m), host fill(previous)"),
    ("fill-linear", f"SELECT mean(v) FROM sparse WHERE {W10} GROUP BY time(1m) fill(linear)"),
    ("fill-linear-by-host", f"SELECT mean(v) FROM sparse WHERE {W10} GROUP BY time(1m), host fill(linear)"),
    ("fill-zero", f"SELECT mean(v) FROM sparse WHERE {W10} GROUP BY time(1m) fill(0)"),
    ("fill-value", f"SELECT max(n) FROM sparse WHERE {W10} GROUP BY time(1m) fill(-42)"),
    ("fill-count-empty", f"SELECT count(v) FROM sparse WHERE {W10} GROUP BY time(1m)"),
    ("fill-sum-empty", f"SELECT sum(n) FROM sparse WHERE {W10} GROUP BY time(1m)"),
    ("fill-multi-agg", f"SELECT mean(v), max(n), count(s) FROM sparse WHERE {W10} GROUP BY time(2m)"),
    # --- bucket alignment
    ("bucket-offset", f"SELECT mean(v) FROM sparse WHERE {W10} GROUP BY time(1m, 30s)"),
    ("bucket-start-misaligned", f"SELECT count(v) FROM sparse WHERE time >= {t(37)} AND time < {t(420)} "
                                f"GROUP BY time(2m)"),
    ("bucket-end-inclusive", f"SELECT count(v) FROM sparse WHERE time >= {t(0)} AND time <= {t(300)} "
                             f"GROUP BY time(1m)"),
    ("bucket-only-upper-bound", f"SELECT max(v) FROM sparse WHERE time < {t(600)} GROUP BY time(1m)"),
    ("bucket-1h-cpu", "SELECT max(usage_user) FROM cpu WHERE hostname = 'host_3' AND "
                      "time >= '2016-01-01T07:10:12Z' AND time < '2016-01-01T09:10:12Z' GROUP BY time(1h)"),
    ("bucket-desc", f"SELECT mean(v) FROM sparse WHERE {W10} GROUP BY time(2m) ORDER BY time DESC"),
    # --- time ranges and literals
    ("time-open-lower", f"SELECT v FROM sparse WHERE time >= {t(60)}"),
    ("time-open-upper", f"SELECT v FROM sparse WHERE time <= {t(60)}"),
    ("time-unbounded", "SELECT v FROM sparse"),
    ("time-open-agg", f"SELECT count(v), mean(v) FROM sparse WHERE time > {t(30)}"),
    ("time-gt-lte", f"SELECT v FROM sparse WHERE time > {t(60)} AND time <= {t(300)}"),
    ("time-int-ns", f"SELECT v FROM sparse WHERE time >= {ns(60)}"),
    ("time-int-s-suffix", f"SELECT v FROM sparse WHERE time >= {1451692860}s"),
    ("time-arith", f"SELECT v FROM sparse WHERE time >= {t(0)} + 1m AND time < {t(0)} + 5m"),
    ("time-now-relative", "SELECT v FROM sparse WHERE time > now() - 36500d"),
    ("time-now-upper-agg", "SELECT count(v) FROM sparse WHERE time > '2010-01-01T00:00:00Z' AND time < now()"),
    ("time-fraction", f"SELECT v FROM sparse WHERE time >= {t(400.5)}"),
    ("time-1ns-apart", f"SELECT v FROM sparse WHERE host = 'c' AND time >= {t(200)} AND time < {t(201)}"),
    # --- ORDER BY / LIMIT / OFFSET / SLIMIT / SOFFSET
    ("order-desc-limit", "SELECT v FROM sparse ORDER BY time DESC LIMIT 3"),
    ("order-desc-by-host-limit", "SELECT v FROM sparse GROUP BY host ORDER BY time DESC LIMIT 2"),
    ("order-asc-explicit", "SELECT v FROM sparse ORDER BY time ASC LIMIT 4"),
    ("limit-offset", "SELECT v FROM sparse LIMIT 2 OFFSET 1"),
    ("limit-per-series", "SELECT v FROM sparse GROUP BY host LIMIT 1"),
    ("limit-agg-buckets", f"SELECT mean(v) FROM sparse WHERE {W10} GROUP BY time(1m) LIMIT 3 OFFSET 2"),
    ("slimit", "SELECT count(v) FROM sparse GROUP BY host SLIMIT 2"),
    ("slimit-soffset", "SELECT count(v) FROM sparse GROUP BY host SLIMIT 1 SOFFSET 1"),
    ("soffset-past-end", "SELECT count(v) FROM sparse GROUP BY host SLIMIT 1 SOFFSET 10"),
    ("lastpoint-sparse", 'SELECT * FROM sparse GROUP BY "host" ORDER BY time DESC LIMIT 1'),
    # --- GROUP BY tags
    ("groupby-star-last", "SELECT last(v) FROM sparse GROUP BY *"),
    ("groupby-star-raw", "SELECT v FROM sparse GROUP BY *"),
    ("groupby-star-time", f"SELECT mean(v) FROM sparse WHERE {W10} GROUP BY time(5m), *"),
    ("groupby-region", "SELECT count(v) FROM sparse GROUP BY region"),
    ("groupby-region-host", "SELECT count(v) FROM sparse GROUP BY region, host"),
    ("groupby-sparse-tag", "SELECT count(v) FROM sparse GROUP BY extra"),
    ("groupby-unknown-tag", "SELECT count(v) FROM sparse GROUP BY nosuchtag"),
    ("groupby-cpu-hostname-order", "SELECT count(usage_user) FROM cpu GROUP BY hostname"),
    ("groupby-cpu-two-tags", "SELECT max(usage_idle) FROM cpu WHERE time >= '2016-01-01T02:00:00Z' AND "
                             "time < '2016-01-01T04:00:00Z' GROUP BY time(1h), region, hostname"),
    # --- SELECT *
    ("select-star", "SELECT * FROM sparse"),
    ("select-star-where-host", "SELECT * FROM sparse WHERE host = 'c'"),
    ("select-star-groupby-host", "SELECT * FROM sparse GROUP BY host"),
    ("select-star-other", "SELECT * FROM other"),
    ("select-star-cpu", "SELECT * FROM cpu WHERE hostname = 'host_0' AND time >= '2016-01-01T00:00:00Z' AND "
                        "time < '2016-01-01T00:01:00Z'"),
    ("select-tag-and-field", "SELECT host, v FROM sparse"),
    ("select-only-tag", "SELECT host FROM sparse"),
    ("select-typed-idents", 'SELECT "v"::field, "host"::tag FROM sparse'),
    ("select-quoted", 'SELECT "v" FROM "sparse" WHERE "host" = \'a\''),
    ("select-qualified", "SELECT v FROM benchmark.autogen.sparse WHERE host = 'b'"),
    ("select-qualified-quoted", 'SELECT v FROM "benchmark"."autogen"."sparse" WHERE host = \'b\''),
    ("select-string-bool", "SELECT s, flag FROM sparse"),
    ("select-cpu-raw-limit", "SELECT usage_user, usage_system FROM cpu WHERE hostname = 'host_0' LIMIT 3"),
    ("select-cpu-desc", "SELECT usage_user FROM cpu WHERE hostname = 'host_0' ORDER BY time DESC LIMIT 3"),
    # --- tag predicates
    ("tag-regex", "SELECT v FROM sparse WHERE host =~ /^[ab]$/"),
    ("tag-regex-unanchored", "SELECT v FROM sparse WHERE host =~ /b|c/"),
    ("tag-not-regex", "SELECT v FROM sparse WHERE host !~ /a/"),
    ("tag-neq", "SELECT v FROM sparse WHERE host != 'a'"),
    ("tag-or", "SELECT v FROM sparse WHERE host = 'a' OR host = 'c'"),
    ("tag-eq-empty", "SELECT v FROM sparse WHERE extra = ''"),
    ("tag-neq-empty", "SELECT v FROM sparse WHERE extra != ''"),
    ("tag-and-time", f"SELECT v FROM sparse WHERE (host = 'a' OR host = 'b') AND time >= {t(30)} "
                     f"AND time < {t(300)}"),
    ("measurement-regex", "SELECT count(v) FROM /^spar/"),
    ("cpu-tag-or-groupby", "SELECT mean(usage_user) FROM cpu WHERE (hostname = 'host_1' OR hostname = 'host_2') "
                           "AND time >= '2016-01-01T01:00:00Z' AND time < '2016-01-01T03:00:00Z' "
                           "GROUP BY time(30m), hostname"),
    # --- field predicates
    ("field-gt", "SELECT v FROM sparse WHERE v > 2"),
    ("field-range", "SELECT v, n FROM sparse WHERE n >= 4 AND v < 50"),
    ("field-string-eq", "SELECT v, s FROM sparse WHERE s = 'x'"),
    ("field-bool", "SELECT v, flag FROM sparse WHERE flag = true"),
    ("field-or-tag", "SELECT v FROM sparse WHERE v > 50 OR host = 'b'"),
    ("field-int-eq", "SELECT v FROM sparse WHERE n = 4"),
    ("field-neq", "SELECT v FROM sparse WHERE v != 3"),
    ("field-string-regex", "SELECT s FROM sparse WHERE s =~ /^[xy]$/"),
    ("field-in-agg", "SELECT count(v) FROM sparse WHERE v > 2 GROUP BY host"),
    ("field-cpu-float-literal", "SELECT count(usage_user) FROM cpu WHERE usage_user > 90.0"),
    # --- arithmetic
    ("arith-raw", "SELECT v * 2 + 1, n - v FROM sparse"),
    ("arith-agg", "SELECT mean(v) * 10 FROM sparse"),
    ("arith-agg-agg", "SELECT max(v) - min(v) FROM sparse GROUP BY host"),
    ("arith-int-div", "SELECT n / 2 FROM sparse"),
    ("arith-modulo", "SELECT n % 3 FROM sparse"),
    ("arith-alias", "SELECT v * 2 AS double_v FROM sparse"),
    ("arith-agg-bucket", f"SELECT max(v) - min(v) FROM sparse WHERE {W10} GROUP BY time(2m)"),
    # --- functions, column naming, types
    ("fn-int-types", "SELECT max(n), mean(n), sum(n), spread(n) FROM sparse"),
    ("fn-repeat-names", "SELECT max(v), max(n), mean(v), mean(n) FROM sparse"),
    ("fn-alias", "SELECT mean(v) AS avg FROM sparse"),
    ("fn-count-string", "SELECT count(s) FROM sparse"),
    ("fn-first-last-string", "SELECT first(s), last(s) FROM sparse"),
    ("fn-multi-selector", "SELECT max(v), min(v) FROM sparse"),
    ("fn-selector-time", "SELECT max(usage_user) FROM cpu WHERE hostname = 'host_3'"),
    ("fn-distinct", "SELECT distinct(s) FROM sparse"),
    ("fn-top", "SELECT top(v, 2) FROM sparse"),
    ("fn-bottom-by-host", "SELECT bottom(v, 1) FROM sparse GROUP BY host"),
    ("fn-count-star", "SELECT count(*) FROM sparse"),
    ("fn-mean-star", "SELECT mean(*) FROM sparse"),
    # One host: over several series whose last points share a timestamp, InfluxDB's choice differs per field
    # (observed in one answer: usage_guest from host_4, usage_idle from host_8): heap order, not semantics.
    ("fn-last-star-cpu", "SELECT last(*) FROM cpu WHERE hostname = 'host_3'"),
    # first() over series sharing the earliest timestamp: the lowest series key wins (host_8 here).
    ("fn-first-ties-series-key", "SELECT first(usage_guest) FROM cpu"),
    ("fn-top-by-time", f"SELECT top(v, 2) FROM sparse WHERE {W10} GROUP BY time(5m)"),
    ("fn-distinct-by-time", f"SELECT distinct(n) FROM sparse WHERE {W10} GROUP BY time(5m)"),
    ("fn-count-cpu", "SELECT count(usage_user) FROM cpu"),
    # --- SHOW
    ("show-databases", "SHOW DATABASES"),
    ("show-measurements", "SHOW MEASUREMENTS"),
    ("show-measurements-regex", "SHOW MEASUREMENTS WITH MEASUREMENT =~ /^sp/"),
    ("show-tag-keys", "SHOW TAG KEYS"),
    ("show-tag-keys-from", "SHOW TAG KEYS FROM sparse"),
    ("show-tag-values", "SHOW TAG VALUES WITH KEY = host"),
    ("show-tag-values-from", 'SHOW TAG VALUES FROM sparse WITH KEY = "host"'),
    ("show-tag-values-cpu", "SHOW TAG VALUES FROM cpu WITH KEY = region"),
    ("show-tag-values-in", 'SHOW TAG VALUES FROM cpu WITH KEY IN ("region", "datacenter")'),
    ("show-field-keys", "SHOW FIELD KEYS"),
    ("show-field-keys-from", "SHOW FIELD KEYS FROM sparse"),
    ("show-series", "SHOW SERIES"),
    ("show-series-from", "SHOW SERIES FROM sparse"),
    ("show-series-where", "SHOW SERIES FROM sparse WHERE host = 'a'"),
    ("show-retention-policies", "SHOW RETENTION POLICIES ON benchmark"),
    # --- answers with nothing in them
    ("empty-tag", "SELECT v FROM sparse WHERE host = 'nope'"),
    ("empty-time", "SELECT v FROM sparse WHERE time > '2030-01-01T00:00:00Z'"),
    ("empty-agg", "SELECT mean(v) FROM sparse WHERE host = 'nope'"),
    ("empty-agg-buckets", f"SELECT mean(v) FROM sparse WHERE host = 'nope' AND {W10} GROUP BY time(1m)"),
    ("unknown-measurement", "SELECT * FROM nosuch"),
    ("unknown-field", "SELECT nosuchfield FROM sparse"),
    ("unknown-field-agg", "SELECT mean(nosuchfield) FROM cpu"),
    # --- statements, errors
    ("multi-statement", "SELECT count(v) FROM sparse; SELECT count(usage_user) FROM cpu"),
    ("create-existing-db", "CREATE DATABASE benchmark"),
    ("error-syntax", "SELEC * FROM cpu"),
    ("error-syntax-no-fields", "SELECT FROM cpu"),
    ("error-unknown-function", "SELECT nosuchfn(v) FROM sparse"),
    ("error-mixed-agg-raw", "SELECT v, mean(v) FROM sparse"),
    ("error-groupby-time-raw", f"SELECT v FROM sparse WHERE {W10} GROUP BY time(1m)"),
    # --- written with precision=s/ms/u, and an overwritten point
    ("precision-writes", "SELECT v FROM prec"),
    ("duplicate-point-merge", "SELECT * FROM dup"),
]
EPOCH = [
    (f"epoch-{e}", "SELECT v FROM sparse", {"epoch": e}) for e in ("ns", "u", "ms", "s", "m", "h")
] + [
    ("epoch-ms-buckets", f"SELECT mean(v) FROM sparse WHERE {W10} GROUP BY time(1m)", {"epoch": "ms"}),
    ("epoch-ns-precision", "SELECT v FROM prec", {"epoch": "ns"}),
    ("epoch-s-show", "SHOW SERIES FROM sparse", {"epoch": "s"}),
]
OTHER = [  # (id, method, params without q, q)
    ("get-method", "GET", {"db": DB}, "SELECT count(v) FROM sparse"),
    ("unknown-db", "POST", {"db": "nosuchdb"}, "SELECT * FROM cpu"),
    ("no-db", "POST", {}, "SELECT * FROM cpu"),
    ("empty-q", "POST", {"db": DB}, ""),
    ("no-db-show-databases", "GET", {}, "SHOW DATABASES"),
]

QUERY_CASES = [pytest.param("POST", {"db": DB, "q": q}, id=i) for i, q in EDGE]
QUERY_CASES += [pytest.param("POST", {"db": DB, "q": q, **p}, id=i) for i, q, p in EPOCH]
QUERY_CASES += [pytest.param(m, {**p, "q": q}, id=i) for i, m, p, q in OTHER]


@pytest.mark.parametrize("method,params", QUERY_CASES)
def test_query(pair, method, params):
    pair.check(method, "/query", params=params, body=b"" if method == "POST" else None,
               describe=f"{method} /query {params}")


# ---------------------------------------------------------------- /write status codes and what they store
# Each case writes its own measurement in database `compat_writes`, then both servers are asked what they stored.

T1, T2, T3 = ns(0), ns(10), ns(20)
T0_MS = ns(0) // 1_000_000
WRITE_CASES = [
    # id, [(params, body bytes, headers)], follow-up query
    ("ok", [({}, f"w_ok,t=a v=1 {T1}\n".encode(), None)], "SELECT * FROM w_ok"),
    ("precision-ms", [({"precision": "ms"}, f"w_ms v=1 {T0_MS}\n".encode(), None)], "SELECT * FROM w_ms"),
    ("gzip", [({}, gzip.compress(f"w_gz v=1 {T1}\n".encode()), {"Content-Encoding": "gzip"})],
     "SELECT * FROM w_gz"),
    ("consistency-param", [({"consistency": "all"}, f"w_cons v=1 {T1}\n".encode(), None)],
     "SELECT * FROM w_cons"),
    ("no-timestamp", [({}, b"w_now v=1\n", None)], "SELECT count(v) FROM w_now"),
    ("malformed-line", [({}, b"w_bad,t=a v=\n", None)], "SELECT * FROM w_bad"),
    ("malformed-after-good", [({}, f"w_badp v=1 {T1}\nw_badp,t=a v=\n".encode(), None)], "SELECT * FROM w_badp"),
    ("type-conflict", [({}, f"w_tc v=1 {T1}\n".encode(), None), ({}, f'w_tc v="s" {T2}\n'.encode(), None)],
     "SELECT * FROM w_tc"),
    ("type-conflict-in-batch", [({}, f'w_tcb v=1 {T1}\nw_tcb v="x" {T2}\nw_tcb v=3 {T3}\n'.encode(), None)],
     "SELECT * FROM w_tcb"),
    ("int-then-float", [({}, f"w_if v=1i {T1}\n".encode(), None), ({}, f"w_if v=1.5 {T2}\n".encode(), None)],
     "SELECT * FROM w_if"),
    ("unknown-database", [({"db": "nosuchdb"}, f"w_nodb v=1 {T1}\n".encode(), None)], "SHOW DATABASES"),
    ("no-database-param", [({"db": None}, f"w_noparam v=1 {T1}\n".encode(), None)], "SHOW DATABASES"),
    ("empty-body", [({}, b"", None)], "SHOW DATABASES"),
    ("escapes", [({}, f'w_esc,t=a\\ b,u=c\\,d v=1,s="q\\"uote" {T1}\n'.encode(), None)],
     "SELECT * FROM w_esc GROUP BY *"),
]


@pytest.mark.parametrize("steps,follow_up", [pytest.param(s, f, id=i) for i, s, f in WRITE_CASES])
def test_write(pair, steps, follow_up):
    for params, body, headers in steps:
        p = {"db": WRITES_DB, **params}
        p = {k: v for k, v in p.items() if v is not None}
        pair.check("POST", "/write", params=p, body=body, headers=headers,
                   describe=f"POST /write {p} body={body[:200]!r}")
    pair.check("POST", "/query", params={"db": WRITES_DB, "q": follow_up}, body=b"",
               describe=f"after the writes: {follow_up}")


def test_ping(pair):
    pair.check("GET", "/ping")
