"""End-to-end tests of the HTTP API against the real binary: writes (v1 and v2), SQL answers, bad input."""

import gzip

import pytest
import requests


def create_db(server, name="db"):
    r = server.sql(f"CREATE DATABASE {name}")
    assert r.status_code == 200, r.text


def test_ping_and_health(server):
    r = requests.get(server.url + "/ping")
    assert r.status_code == 204
    assert r.headers["X-Influxdb-Version"]
    assert requests.get(server.url + "/health").json()["status"] == "pass"


def test_write_v1_all_field_types_and_query_exact_values(server):
    create_db(server)
    body = "\n".join([
        'weather,city=Paris,country=FR temp=12.5,hum=80i,ok=true,note="sunny \\"day\\"",count=7u 1700000000000000000',
        "weather,city=Oslo,country=NO temp=-3.25,hum=95i,ok=F 1700000000000000000",
        "weather,city=Paris,country=FR temp=13.0 1700000060000000000",
        "# a comment line",
        "",
        "other\\ table,tag\\,x=a\\ b value=1 1700000000000000000",
    ])
    r = server.write("db", body)
    assert r.status_code == 204, r.text
    rows = server.rows("SELECT city, country, temp, hum, ok, note, count FROM weather ORDER BY time, city", "db")
    assert rows == [
        {"city": "Oslo", "country": "NO", "temp": -3.25, "hum": 95, "ok": False},
        {"city": "Paris", "country": "FR", "temp": 12.5, "hum": 80, "ok": True, "note": 'sunny "day"', "count": 7},
        {"city": "Paris", "country": "FR", "temp": 13.0},
    ]
    rows = server.rows('SELECT "tag,x", value FROM "other table"', "db")
    assert rows == [{"tag,x": "a b", "value": 1.0}]
    tables = server.rows("SELECT table_name FROM information_schema.tables WHERE table_schema = 'db' ORDER BY 1", "db")
    assert [t["table_name"] for t in tables] == ["other table", "weather"]


def test_precision_and_missing_timestamp(server):
    create_db(server)
    assert server.write("db", "m v=1 1700000000", {"precision": "s"}).status_code == 204
    assert server.write("db", "m v=2 1700000001000", {"precision": "ms"}).status_code == 204
    assert server.write("db", "m v=3 1700000002000000", {"precision": "us"}).status_code == 204
    assert server.write("db", "m v=4").status_code == 204
    rows = server.rows("SELECT CAST(time AS BIGINT) AS t, v FROM m ORDER BY time", "db")
    assert [r["t"] for r in rows[:3]] == [1700000000000000000, 1700000001000000000, 1700000002000000000]
    assert rows[3]["v"] == 4.0 and rows[3]["t"] > 1700000002000000000
    r = server.write("db", "m v=1 1", {"precision": "fortnights"})
    assert r.status_code == 400 and "precision" in r.json()["error"]


def test_v2_write_api_with_official_client(server):
    import influxdb_client
    from influxdb_client.client.write_api import SYNCHRONOUS

    create_db(server, "bucket1")
    with influxdb_client.InfluxDBClient(url=server.url, token="unused", org="org") as client:
        api = client.write_api(write_options=SYNCHRONOUS)
        p = influxdb_client.Point("cpu").tag("host", "h1").field("usage", 42.5).time(1_600_000_000_000_000_000)
        api.write(bucket="bucket1", record=[p, "cpu,host=h2 usage=7 1600000000000000000"])
    rows = server.rows("SELECT host, usage FROM cpu ORDER BY host", "bucket1")
    assert rows == [{"host": "h1", "usage": 42.5}, {"host": "h2", "usage": 7.0}]


def test_gzip_body(server):
    create_db(server)
    body = gzip.compress(b"\n".join(b"m,h=a v=%di %d" % (i, i) for i in range(1000)))
    r = server.write("db", body, headers={"Content-Encoding": "gzip"})
    assert r.status_code == 204, r.text
    assert server.rows("SELECT count(*) AS n, sum(v) AS s FROM m", "db") == [{"n": 1000, "s": 499500}]


def test_unknown_database_is_404(server):
    r = server.write("nope", "m v=1 1")
    assert r.status_code == 404
    assert r.json()["error"] == 'database not found: "nope"'
    r = server.sql("SELECT 1 FROM m", "nope")
    assert r.status_code in (400, 404)


def test_malformed_lines_are_reported_with_line_numbers_and_valid_lines_are_kept(server):
    create_db(server)
    body = "\n".join(["m v=1i 1", "m v= 2", "m v=3i 3", "m,t=a", 'm v="unterminated 5', "m v=6i 6"])
    r = server.write("db", body)
    assert r.status_code == 400
    j = r.json()
    assert j["error"].startswith("partial write:")
    assert j["line"] == 2
    assert j["written"] == 3 and j["rejected"] == 3
    assert [x["line"] for x in j["rejections"]] == [2, 4, 5]
    assert all(x["column"] for x in j["rejections"])
    assert server.rows("SELECT v FROM m ORDER BY time", "db") == [{"v": 1}, {"v": 3}, {"v": 6}]


def test_repeated_series_keys_keep_their_tags_among_rejected_lines(server):
    # The parser shares a repeated key's tags with the line that had it first; lines between that fail,
    # a `time` tag refused after parsing, an escaped key (parsed in full each time) and a key that only
    # starts like another must not disturb which tags a row gets.
    create_db(server)
    lines = [
        "m,h=a,dc=x v=1i {}1",
        "m,h=b,dc=x v=2i {}2",
        "m,h=a,dc=x v= {}3",
        "m,h=a,dc=x,time=t v=4i {}4",
        "m,h=a,dc=x v=5i {}5",
        "m,h=a\\ b,dc=x v=6i {}6",
        "m,h=a\\ b,dc=x v=7i {}7",
        "m,h=a,dc=xy v=8i {}8",
        "m,h=b,dc=x v=9i {}9",
        "m,h=a,dc=x,time=t v=10i {}10",
    ]
    body = "\n".join(line.format(rep) for rep in range(1, 4) for line in lines)  # three times over, at later times
    r = server.write("db", body)
    assert r.status_code == 400, r.text
    j = r.json()
    assert j["written"] == 21 and j["rejected"] == 9, j
    assert [x["line"] for x in j["rejections"]][:3] == [3, 4, 10], j
    rows = server.rows("SELECT h, dc, count(v) AS n, sum(v) AS s FROM m GROUP BY h, dc ORDER BY h, dc", "db")
    assert rows == [
        {"h": "a", "dc": "x", "n": 6, "s": 3 * 6},
        {"h": "a", "dc": "xy", "n": 3, "s": 3 * 8},
        {"h": "a b", "dc": "x", "n": 6, "s": 3 * 13},
        {"h": "b", "dc": "x", "n": 6, "s": 3 * 11},
    ], rows


def test_series_written_before_keep_their_tags_through_new_fields_conflicts_and_drops(server):
    # The server leaves out the tags of lines whose series key the engine knows from earlier requests.
    # A line that needs them after all (a new field, a type conflict, its measurement dropped since) has
    # its request parsed again with every line's tags: no row is lost, misplaced or reported twice.
    create_db(server)
    assert server.write("db", "m,h=a,dc=x v=1i 1\nm,h=b,dc=x v=2i 1").status_code == 204
    assert server.write("db", "m,h=a,dc=x v=3i 2\nm,h=b,dc=x v=4i,w=5i 2\nm,h=c,dc=x v=6i 2").status_code == 204
    r = server.write("db", "m,h=a,dc=x v=7i 3\nm,h=b,dc=x v=8.5 3\nm,h=b,dc=x v=9i 4")
    assert r.status_code == 400, r.text
    j = r.json()
    assert (j["line"], j["written"], j["rejected"]) == (2, 2, 1) and "field type conflict" in j["error"], j
    q = "SELECT h, dc, count(v) AS n, sum(v) AS s, max(w) AS w FROM m GROUP BY h, dc ORDER BY h"
    assert server.rows(q, "db") == [
        {"h": "a", "dc": "x", "n": 3, "s": 11},  # w null: left out
        {"h": "b", "dc": "x", "n": 3, "s": 15, "w": 5},
        {"h": "c", "dc": "x", "n": 1, "s": 6},
    ]
    r = requests.post(server.url + "/query", params={"db": "db", "q": "DROP MEASUREMENT m"}, timeout=60)
    assert r.status_code == 200 and "error" not in r.text, r.text
    assert server.write("db", "m,h=b,dc=x v=10i 5\nm,h=a,dc=x v=11i 5").status_code == 204
    # A new table, without the dropped one's column w.
    assert server.rows("SELECT h, dc, count(v) AS n, sum(v) AS s FROM m GROUP BY h, dc ORDER BY h", "db") == [
        {"h": "a", "dc": "x", "n": 1, "s": 11},
        {"h": "b", "dc": "x", "n": 1, "s": 10},
    ]


def test_lines_the_parser_accepts_but_influxdb_refuses_are_reported_in_line_order(server):
    # A tag named `time`, a line whose only field is `time`, a timestamp out of range at the precision:
    # each refused with its line number, among parse errors and valid lines, which are kept.
    create_db(server)
    big = 9_300_000_000  # seconds: × 1e9 passes i64
    body = "\n".join(["m,time=x v=1i 1", "m v=2i 2", "m v= 3", f"m v=4i {big}", "m time=5i 5", "m,t=a v=6i 6"])
    r = server.write("db", body, params={"precision": "s"})
    assert r.status_code == 400, r.text
    j = r.json()
    assert j["written"] == 2 and j["rejected"] == 4, j
    assert [x["line"] for x in j["rejections"]] == [1, 3, 4, 5], j
    msgs = [x["error"] for x in j["rejections"]]
    assert 'input tag "time" on measurement "m"' in msgs[0], msgs
    assert "out of range" in msgs[2], msgs
    assert 'input field "time" on measurement "m"' in msgs[3], msgs
    assert server.rows("SELECT v FROM m ORDER BY time", "db") == [{"v": 2}, {"v": 6}]


def test_escaped_field_names_and_string_values_are_written(server):
    # Field names with escapes (owned by the parser, not borrowed from the body) and string values reach
    # the write, beside a dropped `time` field and names the parser takes from the line before.
    create_db(server)
    lines = [
        'm,h=a my\\ field=1i,b\\=c=2.5,s="x y",time=7i 1',
        'm,h=a my\\ field=3i,b\\=c=4.5,s="z\\"q" 2',
        "m,h=a plain=5i 3",
        'm,h=b my\\ field=6i,s="w" 4',
    ]
    r = server.write("db", "\n".join(lines))
    assert r.status_code == 204, r.text
    rows = server.rows('SELECT h, "my field" AS f, "b=c" AS bc, s, plain FROM m ORDER BY time', "db")
    # (A null is left out of a row's object.)
    assert rows == [
        {"h": "a", "f": 1, "bc": 2.5, "s": "x y"},
        {"h": "a", "f": 3, "bc": 4.5, "s": 'z"q'},
        {"h": "a", "plain": 5},
        {"h": "b", "f": 6, "s": "w"},
    ], rows


def test_all_lines_bad_is_400_without_partial(server):
    create_db(server)
    r = server.write("db", "m v=\n")
    assert r.status_code == 400
    assert "partial" not in r.json()["error"]
    assert r.json()["error"]


def test_field_type_conflict_rejects_only_that_line(server):
    create_db(server)
    assert server.write("db", "m v=1i 1").status_code == 204
    r = server.write("db", "m v=2.5 2\nm v=3i 3")
    assert r.status_code == 400
    assert "field type conflict" in r.json()["error"]
    assert r.json()["line"] == 1
    assert server.rows("SELECT v FROM m ORDER BY time", "db") == [{"v": 1}, {"v": 3}]


def test_invalid_utf8_line_is_rejected(server):
    create_db(server)
    r = server.write("db", b"m v=1i 1\nm,t=\xff\xfe v=2i 2\n")
    assert r.status_code == 400
    assert r.json()["line"] == 2
    assert server.rows("SELECT count(*) AS n FROM m", "db") == [{"n": 1}]


def test_body_limit_and_gzip_bomb_get_413(make_server):
    s = make_server("--max-body-mib", "1")
    create_db(s)
    big = b"m v=1i 1\n" * 200_000  # 1.8 MB
    r = s.write("db", big)
    assert r.status_code == 413
    bomb = gzip.compress(b"#" * (200 * 1024 * 1024))  # 200 MiB of comments in ~200 KB
    assert len(bomb) < 1024 * 1024
    r = s.write("db", bomb, headers={"Content-Encoding": "gzip"})
    assert r.status_code == 413
    assert "limit" in r.json()["error"]
    assert s.write("db", "m v=1i 1").status_code == 204


def test_sql_errors_are_400_with_datafusion_message(server):
    create_db(server)
    server.write("db", "m v=1 1")
    r = server.sql("SELEKT 1", "db")
    assert r.status_code == 400 and "error" in r.json()
    r = server.sql("SELECT nope FROM m", "db")
    assert r.status_code == 400 and "nope" in r.json()["error"]
    r = server.sql("SELECT * FROM missing_table", "db")
    assert r.status_code == 400 and "missing_table" in r.json()["error"]


def test_sql_time_bucketing_aggregates_joins_and_csv(server):
    create_db(server)
    lines = []
    for h in range(3):
        for i in range(120):  # 2 minutes at 1 s
            lines.append(f"cpu,host=h{h},rack=r{h % 2} usage={h * 100 + i}i,idle={i / 2} {1_700_000_000_000_000_000 + i * 1_000_000_000}")
    assert server.write("db", "\n".join(lines)).status_code == 204
    q = """SELECT host, date_bin(INTERVAL '1 minute', time) AS minute, max(usage) AS mx, avg(idle) AS av, count(*) AS n
           FROM cpu WHERE host IN ('h0', 'h2') AND time >= '2023-11-14T22:13:20Z' GROUP BY host, minute ORDER BY host, minute"""
    rows = server.rows(q, "db")
    assert rows == [
        {"host": "h0", "minute": "2023-11-14T22:13:00", "mx": 39, "av": 9.75, "n": 40},
        {"host": "h0", "minute": "2023-11-14T22:14:00", "mx": 99, "av": 34.75, "n": 60},
        {"host": "h0", "minute": "2023-11-14T22:15:00", "mx": 119, "av": 54.75, "n": 20},
        {"host": "h2", "minute": "2023-11-14T22:13:00", "mx": 239, "av": 9.75, "n": 40},
        {"host": "h2", "minute": "2023-11-14T22:14:00", "mx": 299, "av": 34.75, "n": 60},
        {"host": "h2", "minute": "2023-11-14T22:15:00", "mx": 319, "av": 54.75, "n": 20},
    ]
    q = """SELECT a.host, count(*) AS n FROM cpu a JOIN cpu b ON a.time = b.time AND a.rack = b.rack AND a.host <> b.host
           GROUP BY a.host ORDER BY a.host"""
    assert server.rows(q, "db") == [{"host": "h0", "n": 120}, {"host": "h2", "n": 120}]
    r = server.sql("SELECT host, max(usage) AS mx FROM cpu GROUP BY host ORDER BY host", "db", fmt="csv")
    assert r.status_code == 200
    assert r.text.splitlines() == ["host,mx", "h0,119", "h1,219", "h2,319"]
    r = server.sql("SELECT count(*) AS n FROM cpu WHERE rack = 'r1'", "db", method="POST")
    assert r.json() == [{"n": 120}]


def test_scan_reads_only_selected_series_and_time_range(server):
    create_db(server)
    lines = [f"m,host=h{h} v={h}i {t * 10**9}" for h in range(50) for t in range(100)]
    assert server.write("db", "\n".join(lines)).status_code == 204
    plan = server.rows("EXPLAIN SELECT v FROM m WHERE host = 'h7' AND time >= '1970-01-01T00:00:50Z'", "db")
    text = "\n".join(r["plan"] for r in plan)
    assert "SundialScan: series=1, time=[50000000000, 9223372036854775807]" in text, text
    assert server.rows("SELECT count(*) AS n FROM m WHERE host = 'h7' AND time >= '1970-01-01T00:00:50Z'", "db") == [{"n": 50}]


def test_show_and_drop_database(server):
    create_db(server, "a")
    create_db(server, "b")
    assert server.rows("SHOW DATABASES") == [{"name": "a"}, {"name": "b"}]
    r = server.sql("CREATE DATABASE a")
    assert r.status_code == 409
    assert server.sql("CREATE DATABASE IF NOT EXISTS a").status_code == 200
    assert server.sql("DROP DATABASE a").status_code == 200
    assert server.rows("SHOW DATABASES") == [{"name": "b"}]
    assert server.sql("DROP DATABASE a").status_code == 404


def test_restart_keeps_everything_acknowledged(make_server):
    s = make_server()
    create_db(s)
    assert s.write("db", "\n".join(f"m,h=a v={i}i {i}" for i in range(500))).status_code == 204
    s.stop()
    s = make_server()
    assert s.rows("SELECT count(*) AS n, sum(v) AS s FROM m", "db") == [{"n": 500, "s": 124750}]
    s.kill9()
    s = make_server()
    assert s.rows("SELECT count(*) AS n FROM m", "db") == [{"n": 500}]


def test_last_rows_table_function_equals_window_query_over_segments_and_memtable(make_server):
    """last_rows('t', n) reads only each series' newest rows (n = 1 from block statistics); its answer must
    equal the plain window-function query, for data in segment files and in the memtable at once."""
    s = make_server()
    create_db(s)
    lines = [f"cpu,host=h{h} u={h * 1000 + i}i,f={i / 4} {(i + 1) * 10**9}" for h in range(5) for i in range(300)]
    assert s.write("db", "\n".join(lines)).status_code == 204
    s.stop()  # flushes to segment files
    s = make_server()
    newer = [f"cpu,host=h{h} u={-i}i {(300 + i + 1) * 10**9}" for h in range(0, 5, 2) for i in range(3)]
    assert s.write("db", "\n".join(newer)).status_code == 204  # memtable rows for h0, h2, h4 only
    window = """SELECT host, time, u, f FROM (SELECT *, row_number() OVER (PARTITION BY host ORDER BY time DESC) AS k FROM cpu)
                WHERE k <= {n} ORDER BY host, time"""
    for n in (1, 2, 5):
        got = s.rows(f"SELECT host, time, u, f FROM last_rows('cpu', {n}) ORDER BY host, time", "db")
        assert got == s.rows(window.format(n=n), "db"), n
        assert len(got) == 5 * n
    got = s.rows("SELECT host, u FROM last_rows('cpu', 1) WHERE time < '1970-01-01T00:05:00Z' ORDER BY host", "db")
    assert got == [{"host": f"h{h}", "u": h * 1000 + 298} for h in range(5)]
    plan = "\n".join(r["plan"] for r in s.rows("EXPLAIN SELECT * FROM last_rows('cpu', 1)", "db"))
    assert "last_rows_per_series=1" in plan, plan
    r = s.sql("SELECT * FROM last_rows('cpu', 0)", "db")
    assert r.status_code == 400 and "last_rows" in r.json()["error"]
    r = s.sql("SELECT * FROM last_rows('nope', 1)", "db")
    assert r.status_code == 400 and "nope" in r.json()["error"]


def test_count_min_max_without_group_by_come_from_block_statistics(make_server):
    """Whole blocks in the range: DataFusion answers count/min/max from the scan's exact statistics (block
    footers), so the plan has no scan at all. A range cutting a block must read the rows instead."""
    s = make_server()
    create_db(s)
    vals = {h: [((i * 37 + h) % 101) - 50 for i in range(200)] for h in range(4)}
    lines = [f"m,h=h{h} v={v}i {(i + 1) * 10**9}" for h in range(4) for i, v in enumerate(vals[h])]
    assert s.write("db", "\n".join(lines)).status_code == 204
    s.stop()
    s = make_server()

    def plan(q):
        return "\n".join(r["plan"] for r in s.rows("EXPLAIN " + q, "db"))

    q = "SELECT count(v) AS n, min(v) AS lo, max(v) AS hi FROM m"
    assert "SundialScan" not in plan(q) and "PlaceholderRowExec" in plan(q), plan(q)
    every = [v for h in vals for v in vals[h]]
    assert s.rows(q, "db") == [{"n": 800, "lo": min(every), "hi": max(every)}]
    q = "SELECT count(*) AS n, max(v) AS hi FROM m WHERE h = 'h2'"
    assert "SundialScan" not in plan(q), plan(q)
    assert s.rows(q, "db") == [{"n": 200, "hi": max(vals[2])}]
    q = "SELECT count(v) AS n, min(v) AS lo FROM m WHERE time >= '1970-01-01T00:01:40Z'"
    assert "SundialScan" in plan(q), plan(q)
    later = [v for h in vals for v in vals[h][99:]]
    assert s.rows(q, "db") == [{"n": len(later), "lo": min(later)}]
    # InfluxQL's count goes the same way (and must still say when nothing matches).
    r = requests.get(s.url + "/query", params={"db": "db", "q": "SELECT count(v) FROM m"}).json()
    assert r["results"][0]["series"][0]["values"] == [["1970-01-01T00:00:00Z", 800]]
    r = requests.get(s.url + "/query", params={"db": "db", "q": "SELECT count(v) FROM m WHERE h = 'nope'"}).json()
    assert r == {"results": [{"statement_id": 0}]}


def test_a_large_influxql_answer_sent_in_parts_reads_as_one_body(server):
    # 2,000 hosts' last rows of 12 columns (24,000 cells): the server writes the second half of the
    # series on another thread and sends it as a part of its own, behind a Content-Length for both.
    create_db(server)
    lines = []
    for h in range(2000):
        fields = ",".join(f"f{k}={h * 10 + k}" for k in range(9))
        for t in range(3):
            lines.append(f"cpu,host=h{h},region=r{h % 7},rack=k{h % 13} {fields},t={t}i {1700000000 + t}000000000")
    assert server.write("db", "\n".join(lines)).status_code == 204
    q = 'SELECT * FROM cpu GROUP BY "host" ORDER BY time DESC LIMIT 1'
    r = requests.get(server.url + "/query", params={"db": "db", "q": q}, timeout=60)
    assert r.status_code == 200, r.text[:300]
    assert r.headers.get("Transfer-Encoding") is None
    assert int(r.headers["Content-Length"]) == len(r.content)
    series = r.json()["results"][0]["series"]
    # As InfluxDB orders series under ORDER BY time DESC: by their keys, descending.
    assert [s["tags"]["host"] for s in series] == sorted((f"h{h}" for h in range(2000)), reverse=True)
    columns = ["time", "f0", "f1", "f2", "f3", "f4", "f5", "f6", "f7", "f8", "rack", "region", "t"]
    for s in series:
        h = int(s["tags"]["host"][1:])
        assert s["columns"] == columns
        want = ["2023-11-14T22:13:22Z"] + [h * 10 + k for k in range(9)] + [f"k{h % 13}", f"r{h % 7}", 2]
        assert s["values"] == [want], s
