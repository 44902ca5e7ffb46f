"""psql (postgresql-client 15) against the real server: queries, \\l, \\dt, \\d, \\copy, errors, passwords."""

import os
import subprocess

import pytest


def psql(server, db, *commands, env=None, check=True, user="tester"):
    args = ["psql", "-X", "-h", "127.0.0.1", "-p", str(server.pg_port), "-U", user, "-d", db, "-v", "ON_ERROR_STOP=0"]
    for c in commands:
        args += ["-c", c]
    e = dict(os.environ, PGCONNECT_TIMEOUT="10")
    e.pop("PGPASSWORD", None)
    e.update(env or {})
    r = subprocess.run(args, capture_output=True, text=True, timeout=60, env=e)
    if check:
        assert r.returncode == 0, r.stderr
    return r


def test_select_prints_rows_with_postgres_formats(pg_server, db):
    r = psql(pg_server, db, "SELECT time, host, region, usage, cores FROM cpu ORDER BY time, host")
    lines = [l.rstrip() for l in r.stdout.splitlines()]
    assert lines[0].split("|")[0].strip() == "time"
    assert lines[2] == " 2023-11-14 22:13:20 | a    | eu     |  12.5 |     8"
    assert lines[3] == " 2023-11-14 22:13:20 | b    | eu     | 70.25 |    16"
    assert lines[5] == " 2023-11-14 22:15:20 | b    | us     | 1e+20 |     4"
    assert lines[6] == "(4 rows)"


def test_l_dt_and_d_describe_the_catalog(pg_server, db):
    r = psql(pg_server, db, r"\l")
    assert any(l.split("|")[0].strip() == db for l in r.stdout.splitlines()), r.stdout
    r = psql(pg_server, db, r"\dt")
    rows = [[c.strip() for c in l.split("|")] for l in r.stdout.splitlines() if "|" in l]
    assert rows == [["Schema", "Name", "Type", "Owner"], [db, "cpu", "table", "sundial"]], r.stdout
    r = psql(pg_server, db, r"\d cpu")
    assert f'Table "{db}.cpu"' in r.stdout, r.stdout
    cols = [[c.strip() for c in l.split("|")] for l in r.stdout.splitlines() if "|" in l]
    assert cols == [
        ["Column", "Type", "Collation", "Nullable", "Default"],
        ["time", "timestamp without time zone", "", "not null", ""],
        ["cores", "bigint", "", "", ""],
        ["host", "text", "", "", ""],
        ["region", "text", "", "", ""],
        ["usage", "double precision", "", "", ""],
    ], r.stdout
    r = psql(pg_server, db, r"\d nosuch", check=False)
    assert "Did not find any relation named \"nosuch\"" in r.stderr


def test_multiple_statements_settings_and_session_functions(pg_server, db):
    r = psql(pg_server, db, "SET application_name = 'psql-test'; SHOW application_name; SELECT current_database(), current_schema(), version() LIKE 'PostgreSQL 15%' AS v")
    out = r.stdout
    assert "psql-test" in out
    assert f" {db}             | {db}" in out or out.count(db) >= 2, out
    assert " t\n" in out


def test_errors_carry_sqlstate_and_syntax_position(pg_server, db):
    r = psql(pg_server, db, r"\set VERBOSITY verbose", "SELECT * FROM nosuch", "SELECT nocol FROM cpu", "SELEC 1", "SELECT 1/0", "SELECT 42 AS alive", check=False)
    err = r.stderr
    assert "ERROR:  42P01:" in err
    assert "ERROR:  42703:" in err
    assert "ERROR:  42601:" in err and "LINE 1: SELEC 1\n        ^" in err
    assert "ERROR:  22012:" in err
    assert " 42\n" in r.stdout  # the session survived every error


def test_copy_from_stdin_through_psql(pg_server, tmp_path):
    db = pg_server.new_db("copy")
    data = tmp_path / "rows.csv"
    data.write_text("time,host,temp\n2024-01-01 00:00:00,x,1.5\n2024-01-01 00:00:10,y,\"2.5\"\n")
    psql(pg_server, db, rf"\copy weather (time, host, temp) FROM '{data}' WITH (FORMAT csv, HEADER true)")
    r = psql(pg_server, db, "SELECT host, temp FROM weather ORDER BY time")
    assert " x    |  1.5" in r.stdout and " y    |  2.5" in r.stdout, r.stdout


def test_cleartext_password_method(make_server):
    import psycopg

    s = make_server("--pg-password", "pw2", "--pg-auth", "cleartext")
    with pytest.raises(psycopg.OperationalError, match="password authentication failed"):
        psycopg.connect(s.dsn("postgres", password="nope"))
    with psycopg.connect(s.dsn("postgres", password="pw2"), autocommit=True) as c:
        assert c.execute("SELECT current_user").fetchone() == ("tester",)


def test_password_is_required_when_configured(make_server):
    s = make_server("--pg-password", "s3cret", "--auto-create-databases", "true")
    r = psql(s, "pw", "SELECT 1 AS one", env={"PGPASSWORD": "wrong"}, check=False)
    assert r.returncode != 0 and "password authentication failed" in r.stderr
    r = psql(s, "pw", "SELECT 1 AS one", env={"PGPASSWORD": "s3cret"})
    assert " one \n" in r.stdout or "one" in r.stdout.splitlines()[0]


def test_copy_to_stdout_through_psql(pg_server, db, tmp_path):
    out = tmp_path / "out.csv"
    psql(pg_server, db, rf"\copy (SELECT host, usage FROM cpu WHERE region = 'eu' ORDER BY time, host) TO '{out}' WITH (FORMAT csv, HEADER true)")
    assert out.read_text() == "host,usage\na,12.5\nb,70.25\na,15\n"
    r = psql(pg_server, db, "COPY cpu (host, cores) TO STDOUT")
    assert sorted(r.stdout.splitlines()) == ["a\t8", "a\t8", "b\t16", "b\t4"]
