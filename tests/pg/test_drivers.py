"""psycopg 3 (server-side binding, prepared statements, binary formats) and asyncpg against the real server:
ingest through INSERT and COPY, read back with parameterised time-range queries, exact types and values."""

import asyncio
import datetime as dt
import decimal
import io

import asyncpg
import psycopg
import pytest

UTC = dt.timezone.utc
T0 = dt.datetime(2023, 11, 14, 22, 13, 20)


def connect(server, db, **kw):
    return psycopg.connect(server.dsn(db), autocommit=True, **kw)


def test_select_types_and_values_text_and_binary(pg_server, db):
    q = "SELECT time, host, usage, cores, usage > 20 AS hot, CAST(NULL AS DOUBLE) AS nothing FROM cpu WHERE host = 'b' ORDER BY time"
    with connect(pg_server, db) as c:
        for binary in (False, True):
            cur = c.cursor(binary=binary)
            cur.execute(q)
            assert [d.type_code for d in cur.description] == [1114, 25, 701, 20, 16, 701]
            assert cur.fetchall() == [
                (T0, "b", 70.25, 16, True, None),
                (T0 + dt.timedelta(seconds=120), "b", 1e20, 4, True, None),
            ], f"binary={binary}"


def test_insert_copy_and_parameterised_time_range(pg_server):
    db = pg_server.new_db("ingest")
    with connect(pg_server, db) as c:
        cur = c.cursor()
        cur.execute(
            "INSERT INTO m (time, dev, temp, n, ok) VALUES (%s, %s, %s, %s, %s), (%s, %s, %s, %s, %s)",
            (T0, "d1", 20.5, 1, True, T0 + dt.timedelta(seconds=10), "d2", 21.5, 2, False),
        )
        assert cur.statusmessage == "INSERT 0 2"
        with cur.copy("COPY m (time, dev, temp, n, ok) FROM STDIN") as cp:
            for i in range(3, 103):
                cp.write_row((T0 + dt.timedelta(seconds=10 * i), f"d{i % 3}", 20.0 + i / 4, i, i % 2 == 0))
        assert cur.statusmessage == "COPY 100"
        with cur.copy("COPY m (time, dev, temp) FROM STDIN WITH (FORMAT csv)") as cp:
            cp.write(b"2023-11-14T23:00:00Z,\"d,9\",99.5\n2023-11-14T23:00:01Z,d9,98\n")
        cur.execute("SELECT count(*) FROM m")
        assert cur.fetchone() == (104,)
        # a row whose only field is NULL cannot be stored: the whole COPY fails with 23502
        with pytest.raises(psycopg.errors.NotNullViolation):
            with cur.copy("COPY m (time, dev, temp) FROM STDIN WITH (FORMAT csv)") as cp:
                cp.write(b"2023-11-14T23:00:02Z,d9,\n")
        lo, hi = T0 + dt.timedelta(seconds=20), T0 + dt.timedelta(seconds=60)
        for prepare in (True, True, False):  # a server-side prepared statement, reused
            cur.execute("SELECT time, dev, temp, n, ok FROM m WHERE time >= %s AND time < %s ORDER BY time", (lo, hi), prepare=prepare)
            assert cur.fetchall() == [(T0 + dt.timedelta(seconds=10 * i), f"d{i % 3}", 20.0 + i / 4, i, i % 2 == 0) for i in range(3, 6)]
        # executemany runs in psycopg's pipeline mode: many Parse/Bind/Execute before a Sync
        cur.executemany("INSERT INTO m (time, dev, temp) VALUES (%s, %s, %s)", [(T0 + dt.timedelta(days=1, seconds=i), "em", i / 2) for i in range(50)])
        assert c.execute("SELECT count(*), sum(temp) FROM m WHERE dev = 'em'").fetchone() == (50, sum(i / 2 for i in range(50)))
        cur.execute("SELECT dev, temp FROM m WHERE dev = %s", ("d,9",))
        assert cur.fetchall() == [("d,9", 99.5)]
        # time zone aware parameters are converted to UTC
        cur.execute("SELECT count(*) FROM m WHERE time >= %s", (dt.datetime(2023, 11, 15, 0, 0, tzinfo=dt.timezone(dt.timedelta(hours=1))),))
        assert cur.fetchone() == (2 + 50,)  # the two CSV rows at 23:00 and the executemany rows a day later


def test_copy_to_stdout_with_psycopg(pg_server, db):
    with connect(pg_server, db) as c:
        with c.cursor().copy("COPY (SELECT time, host, usage FROM cpu WHERE host = 'b' ORDER BY time) TO STDOUT") as cp:
            rows = list(cp.rows())
        assert rows == [("2023-11-14 22:13:20", "b", "70.25"), ("2023-11-14 22:15:20", "b", "1e+20")]


def test_unsigned_fields_are_numeric_in_text_and_binary(pg_server):
    db = pg_server.new_db("num")
    pg_server.write(db, "m,k=a u=18446744073709551615u,i=-3i 1700000000\nm,k=b u=0u,i=7i 1700000001")
    with connect(pg_server, db) as c:
        for binary in (False, True):
            cur = c.cursor(binary=binary)
            cur.execute("SELECT u, i FROM m ORDER BY time")
            assert [d.type_code for d in cur.description] == [1700, 20]
            assert cur.fetchall() == [(decimal.Decimal("18446744073709551615"), -3), (decimal.Decimal(0), 7)], binary


def test_prepared_statement_binary_results_and_params(pg_server, db):
    with connect(pg_server, db) as c:
        cur = c.cursor(binary=True)
        for host, want in (("a", [12.5, 15.0]), ("b", [70.25, 1e20]), ("zz", [])):
            cur.execute("SELECT usage FROM cpu WHERE host = %b AND time >= %b ORDER BY time", (host, T0), prepare=True)
            assert [r[0] for r in cur.fetchall()] == want


def test_grafana_time_series_and_catalog_queries(pg_server, db):
    with connect(pg_server, db) as c:
        # $__timeGroupAlias(time, 1m) and $__timeFilter(time) expanded by Grafana
        rows = c.execute(
            "SELECT date_bin(INTERVAL '60 seconds', time) AS \"time\", avg(usage) AS usage FROM cpu "
            "WHERE time BETWEEN '2023-11-14T22:13:00Z' AND '2023-11-14T22:15:00Z' AND region = 'eu' GROUP BY 1 ORDER BY 1"
        ).fetchall()
        assert rows == [(dt.datetime(2023, 11, 14, 22, 13), (12.5 + 70.25) / 2), (dt.datetime(2023, 11, 14, 22, 14), 15.0)]
        # $__timeGroupAlias(time, '1m') in Grafana's PostgreSQL macro form (epoch seconds as the time column)
        rows = c.execute(
            "SELECT floor(extract(epoch from time)/60)*60 AS \"time\", avg(usage) FROM cpu "
            "WHERE time BETWEEN '2023-11-14T22:13:00Z' AND '2023-11-14T22:15:00Z' AND region = 'eu' GROUP BY 1 ORDER BY 1"
        ).fetchall()
        assert [(int(t), v) for t, v in rows] == [(1699999980, (12.5 + 70.25) / 2), (1700000040, 15.0)]
        rows = c.execute(
            "SELECT date_trunc('minute', time) AS time, host AS metric, max(cores) FROM cpu "
            "WHERE time >= '2023-11-14T22:13:00Z' AND time <= '2023-11-14T22:20:00Z' GROUP BY 1, 2 ORDER BY 1, 2"
        ).fetchall()
        assert rows[0] == (dt.datetime(2023, 11, 14, 22, 13), "a", 8)
        tables = c.execute(
            """SELECT CASE WHEN quote_ident(table_schema) IN (
                   SELECT CASE WHEN trim(s[i]) = '"$user"' THEN user ELSE trim(s[i]) END
                   FROM generate_series(array_lower(string_to_array(current_setting('search_path'),','),1),
                                        array_upper(string_to_array(current_setting('search_path'),','),1)) as i,
                        string_to_array(current_setting('search_path'),',') s)
                 THEN quote_ident(table_name) ELSE quote_ident(table_schema) || '.' || quote_ident(table_name) END AS "table"
               FROM information_schema.tables
               WHERE quote_ident(table_schema) NOT IN ('information_schema', 'pg_catalog', '_timescaledb_cache')
               ORDER BY 1"""
        ).fetchall()
        assert ("cpu",) in tables
        cols = c.execute(
            "SELECT quote_ident(column_name) AS \"column\", data_type AS \"type\" FROM information_schema.columns "
            "WHERE quote_ident(table_name) = 'cpu' AND table_schema = current_schema() ORDER BY ordinal_position"
        ).fetchall()
        assert cols == [("time", "timestamp without time zone"), ("cores", "bigint"), ("host", "text"), ("region", "text"), ("usage", "double precision")]


def test_errors_and_transactions(pg_server, db):
    with connect(pg_server, db) as c:
        for sql, state in (("SELECT * FROM nosuch", "42P01"), ("SELECT nocol FROM cpu", "42703"), ("SELEC 1", "42601"), ("SELECT 1/0", "22012")):
            with pytest.raises(psycopg.Error) as e:
                c.execute(sql)
            assert e.value.sqlstate == state, sql
        with pytest.raises(psycopg.Error) as e:
            c.execute("SELECT * FROM cpu WHERE time >= %s", ("not a time",))
        assert e.value.sqlstate == "22007"
        assert c.execute("SELECT count(*) FROM cpu").fetchone() == (4,)
    # a failed transaction block refuses statements until ROLLBACK, like PostgreSQL
    with psycopg.connect(pg_server.dsn(db)) as c:
        with pytest.raises(psycopg.errors.UndefinedTable):
            c.execute("SELECT * FROM nosuch")
        with pytest.raises(psycopg.errors.InFailedSqlTransaction):
            c.execute("SELECT 1")
        c.rollback()
        assert c.execute("SELECT 1 AS x").fetchone() == (1,)


def test_asyncpg_prepared_binary_protocol(pg_server, db):
    async def main():
        conn = await asyncpg.connect(host="127.0.0.1", port=pg_server.pg_port, user="apg", database=db)
        try:
            stmt = await conn.prepare("SELECT time, host, usage, cores FROM cpu WHERE time >= $1 AND time < $2 AND host = $3 ORDER BY time")
            assert [t.name for t in stmt.get_parameters()] == ["timestamp", "timestamp", "text"]
            rows = await stmt.fetch(T0, T0 + dt.timedelta(minutes=5), "a")
            assert [tuple(r) for r in rows] == [(T0, "a", 12.5, 8), (T0 + dt.timedelta(seconds=60), "a", 15.0, 8)]
            rows = await stmt.fetch(T0, T0 + dt.timedelta(minutes=5), "b")
            assert [r["cores"] for r in rows] == [16, 4]
            assert await conn.fetchval("SELECT count(*) FROM cpu WHERE usage > $1", 20.0) == 2
            await conn.execute("INSERT INTO cpu (time, host, region, usage, cores) VALUES ($1, $2, $3, $4, $5)", T0 + dt.timedelta(hours=1), "c", "ap", 3.5, 2)
            assert await conn.fetchval("SELECT usage FROM cpu WHERE host = $1", "c") == 3.5
            with pytest.raises(asyncpg.exceptions.UndefinedTableError):
                await conn.fetch("SELECT * FROM nosuch")
            # binary COPY, typed by the table's columns (asyncpg describes SELECT cols FROM t LIMIT 1 first)
            records = [(T0 + dt.timedelta(hours=3, seconds=i), i, "e", None, i / 4) for i in range(1000)]
            n = await conn.copy_records_to_table("cpu", records=records, columns=["time", "cores", "host", "region", "usage"])
            assert n == "COPY 1000"
            rows = await conn.fetch("SELECT time, cores, region, usage FROM cpu WHERE host = 'e' ORDER BY time LIMIT 2")
            assert [tuple(r) for r in rows] == [(T0 + dt.timedelta(hours=3), 0, None, 0.0), (T0 + dt.timedelta(hours=3, seconds=1), 1, None, 0.25)]
            n = await conn.copy_to_table("cpu", source=io.BytesIO(b"2023-11-15 00:13:20,1,d,ap,0.5\n"), columns=["time", "cores", "host", "region", "usage"], format="csv")
            assert n == "COPY 1"
            assert await conn.fetchval("SELECT count(*) FROM cpu") == 1006
        finally:
            await conn.close()

    asyncio.run(main())
