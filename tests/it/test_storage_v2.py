"""Storage v2 features through the real binary: InfluxQL and SQL deletes, DROP SERIES, retention, several
data directories."""

import os
import time
from pathlib import Path

import requests

H = 3600 * 10**9


def influxql(server, q, db="db"):
    r = requests.post(server.url + "/query", params={"db": db, "q": q}, timeout=60)
    assert r.status_code == 200, r.text
    return r.json()["results"][0]


def count_by_host(server):
    rows = server.rows("SELECT host, count(*) AS n FROM m GROUP BY host ORDER BY host", "db")
    return {r["host"]: r["n"] for r in rows}


def test_deletes_and_drop_series_are_honoured_at_once_and_after_kill9(make_server):
    s = make_server()
    assert s.sql("CREATE DATABASE db").status_code == 200
    lines = [f"m,host=h{h} v={i}i {i * 60 * 10**9}" for h in range(4) for i in range(120)]  # 2 h per host
    assert s.write("db", "\n".join(lines)).status_code == 204
    s.stop()  # flushed: deletes must reach segment rows too
    s = make_server()
    assert s.write("db", "\n".join(f"m,host=h{h} v=999i {(120 + i) * 60 * 10**9}" for h in range(4) for i in range(10))).status_code == 204

    # InfluxQL: a time range of one series.
    assert "error" not in influxql(s, "DELETE FROM m WHERE host = 'h1' AND time < '1970-01-01T01:00:00Z'")
    assert count_by_host(s) == {"h0": 130, "h1": 70, "h2": 130, "h3": 130}
    # InfluxQL: a whole series, segments and memtable alike.
    assert "error" not in influxql(s, "DROP SERIES FROM m WHERE host = 'h2'")
    assert count_by_host(s) == {"h0": 130, "h1": 70, "h3": 130}
    # SQL: time range and tag equality, pushed down exactly.
    assert s.sql("DELETE FROM m WHERE host IN ('h0', 'h3') AND time >= '1970-01-01T01:30:00Z'", "db").status_code == 200
    assert count_by_host(s) == {"h0": 90, "h1": 70, "h3": 90}
    # What a tombstone cannot express is refused, and nothing changes.
    r = s.sql("DELETE FROM m WHERE v > 5", "db")
    assert r.status_code == 400 and "time ranges and tag equality" in r.json()["error"], r.text
    assert "fields not supported" in influxql(s, "DELETE FROM m WHERE v > 5")["error"]
    assert "time" in influxql(s, "DROP SERIES FROM m WHERE time > 0")["error"]
    assert count_by_host(s) == {"h0": 90, "h1": 70, "h3": 90}
    # Rows written after a delete at deleted times are visible.
    assert s.write("db", "m,host=h2 v=7i 0").status_code == 204
    s.kill9()
    s = make_server()
    assert count_by_host(s) == {"h0": 90, "h1": 70, "h2": 1, "h3": 90}
    assert s.rows("SELECT min(v) AS lo FROM m WHERE host = 'h1'", "db") == [{"lo": 60}]


def test_retention_from_influxql_with_duration_and_the_server_default(make_server):
    s = make_server("--retention", "30d")
    assert "error" not in influxql(s, "CREATE DATABASE short WITH DURATION 1h", db="")
    assert s.sql("CREATE DATABASE dflt").status_code == 200
    rp = influxql(s, "SHOW RETENTION POLICIES ON short", db="")["series"][0]["values"][0]
    assert rp[:2] == ["autogen", "1h0m0s"]
    rp = influxql(s, "SHOW RETENTION POLICIES ON dflt", db="")["series"][0]["values"][0]
    assert rp[:2] == ["autogen", "720h0m0s"]
    now = __import__("time").time_ns()
    r = s.write("short", f"m v=1 {now}\nm v=2 {now - 2 * H}")
    assert r.status_code == 400 and r.json()["written"] == 1, r.text  # the old point is beyond retention
    assert s.rows("SELECT count(*) AS n FROM m", "short") == [{"n": 1}]


def test_partitions_spread_over_several_data_directories(make_server, data_dir):
    other = Path(str(data_dir) + "-b")
    s = make_server("--data-dir", str(other), "--partition-duration", "1h")
    assert s.sql("CREATE DATABASE db").status_code == 200
    lines = [f"m,host=a v={i}i {i * H}" for i in range(12)]  # 12 one-hour partitions
    assert s.write("db", "\n".join(lines)).status_code == 204
    s.stop()
    partitions = lambda d: [p for p in Path(d).glob("db*/p*") if any(p.iterdir())]
    assert partitions(data_dir) and partitions(other), (os.listdir(data_dir), os.listdir(other))
    assert len(partitions(data_dir)) + len(partitions(other)) == 12
    s = make_server("--data-dir", str(other), "--partition-duration", "1h")
    assert s.rows("SELECT count(*) AS n, sum(v) AS t FROM m", "db") == [{"n": 12, "t": 66}]


def seg_files(data_dir):
    return sorted(p for p in Path(data_dir).rglob("*.seg"))


def rp_duration(server, db):
    return influxql(server, f"SHOW RETENTION POLICIES ON {db}", db="")["series"][0]["values"][0][1]


def test_retention_changed_by_alter_retention_policy_and_sql_is_enforced_at_once_and_survives_kill9(make_server, data_dir):
    D = 24 * H
    s = make_server()
    assert "error" not in influxql(s, "CREATE DATABASE db WITH DURATION 30d", db="")
    now = __import__("time").time_ns()
    # One point per day for 10 days: ten daily partitions.
    assert s.write("db", "\n".join(f"m v={d} {now - d * D}" for d in range(10))).status_code == 204
    s.stop()  # flushed into segment files
    s = make_server()
    files = len(seg_files(data_dir))
    assert files >= 10

    # InfluxQL, as InfluxDB spells it (the default policy is autogen).
    assert "error" not in influxql(s, "ALTER RETENTION POLICY autogen ON db DURATION 3d DEFAULT", db="")
    assert rp_duration(s, "db") == "72h0m0s"
    assert s.rows("SELECT count(*) AS n FROM m", "db") == [{"n": 3}]
    # The expired partitions' files are gone when the statement returns, not at the next periodic run.
    assert len(seg_files(data_dir)) <= 4, seg_files(data_dir)
    r = s.write("db", f"m v=1 {now - 5 * D}")
    assert r.status_code == 400 and "beyond retention" in r.text, r.text

    s.kill9()
    s = make_server()
    assert rp_duration(s, "db") == "72h0m0s", "the new retention is durable"
    assert s.rows("SELECT count(*) AS n FROM m", "db") == [{"n": 3}]

    # SQL.
    assert s.sql("ALTER DATABASE db SET RETENTION '2d'").status_code == 200
    assert rp_duration(s, "db") == "48h0m0s"
    assert s.rows("SELECT count(*) AS n FROM m", "db") == [{"n": 2}]
    assert s.sql("ALTER DATABASE db SET RETENTION 'inf'").status_code == 200
    assert rp_duration(s, "db") == "0s"
    s.kill9()
    s = make_server()
    assert rp_duration(s, "db") == "0s"


def test_retention_statements_sundial_cannot_honour_are_refused_clearly(server):
    s = server
    assert s.sql("CREATE DATABASE db").status_code == 200
    for q, want in [
        ("ALTER RETENTION POLICY weekly ON db DURATION 7d", "retention policy not found: weekly"),
        ("ALTER RETENTION POLICY autogen ON nope DURATION 7d", "database not found: nope"),
        ("ALTER RETENTION POLICY autogen ON db SHARD DURATION 1d", "SHARD DURATION is not supported"),
        ("ALTER RETENTION POLICY autogen ON db REPLICATION 3", "REPLICATION 3 is not supported"),
        ("CREATE RETENTION POLICY weekly ON db DURATION 7d REPLICATION 1 DEFAULT", "one retention policy per database"),
        ("CREATE RETENTION POLICY autogen ON db DURATION 7d REPLICATION 1", "conflicts with an existing policy"),
    ]:
        res = influxql(s, q, db="")
        assert want in res.get("error", ""), (q, res)
    # Creating autogen again with its current settings is a no-op, as in InfluxDB.
    assert "error" not in influxql(s, "CREATE RETENTION POLICY autogen ON db DURATION INF REPLICATION 1 DEFAULT", db="")
    # A syntax error is a 400 with InfluxDB's parse error.
    r = requests.post(s.url + "/query", params={"q": "ALTER RETENTION POLICY autogen ON db"}, timeout=60)
    assert r.status_code == 400 and "expected DURATION, REPLICATION, SHARD, DEFAULT" in r.text, r.text
    # SQL: a malformed statement names the expected form; an unknown database is 404.
    r = s.sql("ALTER DATABASE db SET RETENTION 30d")
    assert r.status_code == 400 and "ALTER DATABASE <name> SET RETENTION '<duration>'" in r.text, r.text
    assert s.sql("ALTER DATABASE nope SET RETENTION '1d'").status_code == 404
    assert rp_duration(s, "db") == "0s", "nothing changed"


def debug_vars(server):
    r = requests.get(server.url + "/debug/vars", timeout=60)
    assert r.status_code == 200, r.text
    return r.json()["sundial"]


def wait_compaction(server, want, timeout=60):
    deadline = time.monotonic() + timeout
    while (c := debug_vars(server)["compaction"]) != want:
        assert time.monotonic() < deadline, (c, want)
        time.sleep(0.1)


def test_debug_vars_reports_compaction_idle_only_once_waiting_partitions_are_merged(make_server, data_dir):
    """Each restart flushes one file into each of two 1-hour partitions. The older (past) partition with two
    files is work for the picker; the newest with two is not (below the size-tiered trigger) until its files
    are `--compact-full-write-cold-secs` old. /debug/vars says which, and reads all zero once both are one
    file."""
    s = make_server("--partition-duration", "1h")
    assert debug_vars(s)["compaction"] == {"running": 0, "pending": 0, "write_cold_later": 0}, "empty"
    assert s.sql("CREATE DATABASE db").status_code == 200
    for k in range(2):
        lines = [f"cpu,host=h{i} v={i * k}i {t * H + k * 1000 + i}" for t in range(2) for i in range(50)]
        assert s.write("db", "\n".join(lines)).status_code == 204
        s.stop()
        s = make_server("--partition-duration", "1h")
    wait_compaction(s, {"running": 0, "pending": 0, "write_cold_later": 1})
    parts = sorted(p for p in data_dir.glob("db*/p*") if p.is_dir())
    assert [len(list(p.glob("*.seg"))) for p in parts] == [1, 2], parts
    s.stop()
    s = make_server("--partition-duration", "1h", "--compact-full-write-cold-secs", "1")
    wait_compaction(s, {"running": 0, "pending": 0, "write_cold_later": 0})
    assert [len(list(p.glob("*.seg"))) for p in parts] == [1, 1], parts
    assert s.rows("SELECT count(*) AS n FROM cpu", "db") == [{"n": 200}]


def test_debug_vars_counts_writes_and_what_they_waited_for(server):
    """/debug/vars counts the writes that reached the memtable (a refused body is not one) and the seconds
    they waited: for another write's turn, for the flush when it was behind, for the WAL's fsync."""
    w = debug_vars(server)["writes"]
    assert w == {"count": 0, "lock_seconds": 0.0, "stalled": 0, "stall_seconds": 0.0, "durable_seconds": 0.0}
    assert server.sql("CREATE DATABASE db").status_code == 200
    for k in range(3):
        assert server.write("db", f"cpu,host=a v={k}i {k}").status_code == 204
    assert server.write("db", "cpu,host=a v=").status_code == 400
    w = debug_vars(server)["writes"]
    assert w["count"] == 3 and w["stalled"] == 0, w
    assert w["durable_seconds"] > 0 and w["stall_seconds"] == 0, w


def test_many_series_read_back_through_a_small_block_index_cache_after_restart(make_server):
    """Series catalog and segment block indexes after a restart: every series is found by its tags, reads
    go through a block-index cache far smaller than the indexes (so groups are evicted and decoded again),
    and /debug/vars reports what the catalog and the cache hold."""
    n = 6000
    s = make_server("--partition-duration", "1h")
    assert s.sql("CREATE DATABASE db").status_code == 200
    lines = [f"cpu,hostname=host_{i},region=r{i % 7},rack={i % 50} usage={i}i,idle={i / 2} {t * H + i}"
             for t in range(2) for i in range(n)]
    assert s.write("db", "\n".join(lines)).status_code == 204
    before = debug_vars(s)
    assert before["series"] == n
    s.stop()  # flushes: every row is in segment files now
    s = make_server("--partition-duration", "1h", "--block-index-cache-mib", "1")
    v = debug_vars(s)
    assert v["series"] == n and v["memtable_rows"] == 0, v
    # The catalog's heap: tag-set arenas, indexes and dictionaries. 3 tags and one unique value a series.
    assert 20 * n < v["catalog_series_bytes"] < 200 * n, v
    assert v["block_index_cache"]["capacity"] == 1 << 20
    got = s.rows("SELECT region, count(*) AS n, sum(usage) AS u FROM cpu GROUP BY region ORDER BY region", "db")
    assert got == [{"region": f"r{k}", "n": 2 * len(range(k, n, 7)), "u": 2 * sum(range(k, n, 7))} for k in range(7)]
    for i in (0, 1234, n - 1):
        got = s.rows(f"SELECT time, usage, idle FROM cpu WHERE hostname = 'host_{i}' ORDER BY time", "db")
        assert [(r["usage"], r["idle"]) for r in got] == [(i, i / 2)] * 2, got
    got = influxql(s, "SELECT last(usage) FROM cpu WHERE rack = '7' GROUP BY hostname")
    assert sorted(int(x["tags"]["hostname"][5:]) for x in got["series"]) == list(range(7, n, 50))
    c = debug_vars(s)["block_index_cache"]
    assert c["misses"] > 0 and c["bytes"] <= c["capacity"], c


def test_series_beyond_max_series_per_database_are_refused_with_the_line_and_the_limit(make_server):
    s = make_server("--max-series-per-database", "3")
    assert s.sql("CREATE DATABASE db").status_code == 200
    body = "\n".join(f"cpu,host=h{i} v={i}i {i}" for i in range(5))
    r = s.write("db", body)
    assert r.status_code == 400, r.text
    j = r.json()
    assert j["error"].startswith("partial write:") and j["line"] == 4, j
    assert "series per database" in j["error"] and "--max-series-per-database" in j["error"], j
    assert j["written"] == 3 and j["rejected"] == 2, j
    # Existing series keep accepting writes; a refused row left no table behind.
    assert s.write("db", "cpu,host=h0 v=10i 10").status_code == 204
    assert s.write("db", "disk,dev=sda v=1i 1").status_code == 400
    assert debug_vars(s)["series"] == 3
    assert s.rows("SELECT host, count(*) AS n FROM cpu GROUP BY host ORDER BY host", "db") == [
        {"host": "h0", "n": 2}, {"host": "h1", "n": 1}, {"host": "h2", "n": 1}]


def test_last_rows_from_segment_tables_follow_newer_writes_and_deletes(make_server):
    """TSBS's lastpoint shape over flushed segments answers from each segment's table of last rows
    (reported by /debug/vars), and still takes newer rows in the memtable, rows a delete hides, and a
    field missing from a series' last row (null) into account."""
    n = 300
    s = make_server("--partition-duration", "1h")
    assert s.sql("CREATE DATABASE db").status_code == 200
    lines = []
    for t in range(3):
        for i in range(n):
            idle = "" if (i % 5 == 0 and t == 2) else f",idle={t * 1000 + i / 2}"
            lines.append(f"cpu,hostname=host_{i:03},region=r{i % 3} usage={t * 1000 + i}i{idle} {t * 60 * 10**9 + i}")
    assert s.write("db", "\n".join(lines)).status_code == 204
    s.stop()  # flushes: every row is in a segment file
    s = make_server("--partition-duration", "1h")
    q = 'SELECT * FROM cpu GROUP BY "hostname" ORDER BY time DESC LIMIT 1'

    def last_rows():
        got = {}
        for x in influxql(s, q)["series"]:
            assert len(x["values"]) == 1, x
            row = dict(zip(x["columns"], x["values"][0]))
            got[x["tags"]["hostname"]] = (row["usage"], row["idle"], row["region"])
        return got

    want = {f"host_{i:03}": (2000 + i, None if i % 5 == 0 else 2000 + i / 2, f"r{i % 3}") for i in range(n)}
    assert last_rows() == want
    v = debug_vars(s)["last_values"]
    assert v["tables"] >= 1 and v["bytes"] > 0, v
    # A newer row of one host, in the memtable; the newest rows of two others deleted.
    assert s.write("db", f"cpu,hostname=host_007,region=r1 usage=5i {3 * 60 * 10**9}").status_code == 204
    assert "error" not in influxql(s, "DELETE FROM cpu WHERE hostname = 'host_010' AND time >= '1970-01-01T00:02:00Z'")
    assert "error" not in influxql(s, "DELETE FROM cpu WHERE hostname = 'host_011' AND time >= '1970-01-01T00:01:00Z'")
    want["host_007"] = (5, None, "r1")
    want["host_010"] = (1010, 1005.0, "r1")
    want["host_011"] = (11, 5.5, "r2")
    assert last_rows() == want


def test_threshold_reads_by_the_hour_keep_decoded_pages_and_answer_the_same_from_them(make_server):
    """A `WHERE field > x` read decodes only the hours whose statistics may hold such a row; the pages it
    decodes (a block's column longer than a page, 2,048 rows) are kept (`decoded_pages` in /debug/vars),
    and the same statement asked again reads them from there, with the same answer, which is exactly
    the rows over the threshold. The cache's size is `--decoded-pages-mib`'s."""
    s = make_server()
    assert s.sql("CREATE DATABASE db").status_code == 200
    step = 2 * 10**9  # 1,800 rows an hour, 10,800 in six hours: a block's columns are several pages
    rows = 6 * 1800
    # Over 90 only in hours 1 and 4 (minutes 10-20 of each); a second field follows the row number.
    usage = [95 + i % 3 if (i // 1800) in (1, 4) and 300 <= i % 1800 < 600 else 40 + i % 40 for i in range(rows)]
    for h in ("a", "b"):
        lines = [f"cpu,host={h} usage={u}i,seq={i}i {i * step}" for i, u in enumerate(usage)]
        assert s.write("db", "\n".join(lines)).status_code == 204
    s.stop()  # flushed into a segment file, whose blocks carry hour statistics
    s = make_server("--decoded-pages-mib", "8")
    assert debug_vars(s)["decoded_pages"]["capacity"] == 8 << 20
    q = "SELECT * FROM cpu WHERE usage > 90 AND time >= 0 AND time < 21600000000000"
    want = sorted((i * step, h, i) for h in ("a", "b") for i, u in enumerate(usage) if u > 90)

    def answer():
        r = requests.get(s.url + "/query", params={"db": "db", "q": q, "epoch": "ns"}, timeout=60)
        assert r.status_code == 200, r.text
        x = r.json()["results"][0]["series"][0]
        assert x["columns"] == ["time", "host", "seq", "usage"], x["columns"]
        return sorted((t, h, seq) for t, h, seq, _ in x["values"])

    before = debug_vars(s)["decoded_pages"]
    assert answer() == want
    first = debug_vars(s)["decoded_pages"]
    assert first["misses"] > before["misses"] and first["entries"] > before["entries"], (before, first)
    assert 0 < first["bytes"] <= first["capacity"], first
    assert answer() == want
    second = debug_vars(s)["decoded_pages"]
    assert second["misses"] == first["misses"] and second["hits"] > first["hits"], (first, second)
