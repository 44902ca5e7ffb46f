#!/usr/bin/env python3
"""Figures for the PostgreSQL wire protocol (issue 6), through psycopg 3:

- point-query latency: a prepared statement over one series and a 1 h window (360 rows), and the same query
  over Sundial's HTTP SQL endpoint;
- rows/s of a large result streamed to the client;
- INSERT (1000-row statements) and COPY FROM STDIN ingest rows/s;
- with --compare-postgres, the same workloads against a local PostgreSQL 15 (Debian's postgresql-15,
  started by this script on a scratch cluster, table indexed on (host, time)), printed as ratios.

    bench/pg_bench.py [--bin PATH] [--rows 1000000] [--iterations 200] [--compare-postgres]

Starts its own servers on scratch directories and ephemeral ports; checks every answer, not only its
time. Numbers from a debug build (the default binary) are not speed claims: build with
`cargo build --release` and pass `--bin $CARGO_TARGET_DIR/release/sundial`.
"""

import argparse
import io
import json
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path

import psycopg

T0 = 1_700_000_000  # seconds since the epoch: 2023-11-14 22:13:20 UTC
SERIES, POINTS = 10, 8640  # 10 series × one point per 10 s for a day
PG_BIN = Path("/usr/lib/postgresql/15/bin")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_sundial(binary, data_dir):
    p = subprocess.Popen([binary, "serve", "--data-dir", data_dir, "--http-addr", "127.0.0.1:0", "--pg-addr", "127.0.0.1:0",
                          "--wal-sync", "batch"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    http = pg = None
    while pg is None:
        line = p.stdout.readline().decode()
        if not line:
            raise SystemExit("sundial did not start")
        if m := re.search(r"listening on (http://\S+)", line):
            http = m.group(1)
        if m := re.search(r"postgres listening on \S+:(\d+)", line):
            pg = int(m.group(1))
    return p, http, pg


def start_postgres(root):
    """A throw-away PostgreSQL 15 cluster owned by the `postgres` user (initdb refuses root)."""
    data = Path(root) / "pgdata"
    data.mkdir(parents=True)
    if os.geteuid() == 0:
        shutil.chown(root, "postgres")
        shutil.chown(data, "postgres")
    run_as = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
    subprocess.run(run_as + [str(PG_BIN / "initdb"), "-D", str(data), "-A", "trust", "-U", "bench", "--no-sync"],
                   check=True, capture_output=True)
    port = free_port()
    p = subprocess.Popen(run_as + [str(PG_BIN / "postgres"), "-D", str(data), "-p", str(port), "-k", str(root),
                                   "-c", "listen_addresses=127.0.0.1"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(100):
        try:
            psycopg.connect(f"host=127.0.0.1 port={port} dbname=postgres user=bench").close()
            return p, port
        except psycopg.OperationalError:
            time.sleep(0.1)
    raise SystemExit("postgres did not start")


def http_sql(url, db, q):
    params = {"q": q} if db is None else {"db": db, "q": q}
    with urllib.request.urlopen(url + "/api/v1/sql?" + urllib.parse.urlencode(params), timeout=120) as r:
        return json.loads(r.read())


def median_ms(v):
    return statistics.median(v) * 1e3


def p99_ms(v):
    v = sorted(v)
    return v[min(len(v) - 1, int(0.99 * len(v)))] * 1e3


def copy_text(rows):
    """COPY text rows (time, host, v): `rows` distinct (series, time) pairs."""
    buf = io.StringIO()
    for i in range(rows):
        s = T0 + i // 100
        buf.write(f"{time.strftime('%Y-%m-%d %H:%M:%S', time.gmtime(s))}+00\th{i % 100}\t{i}.5\n")
    return buf.getvalue().encode()


def workloads(c, a, setup_sql=()):
    """Runs every workload on connection `c` (autocommit); returns {name: seconds or latencies}."""
    out = {}
    for s in setup_sql:
        c.execute(s)
    cpu = copy_text_cpu()
    with c.cursor().copy("COPY cpu (time, host, usage) FROM STDIN") as cp:
        cp.write(cpu)
    for s in ("ANALYZE cpu",) if setup_sql else ():
        c.execute(s)
    lo, hi = T0 + 3600 * 5, T0 + 3600 * 6
    q = "SELECT time, usage FROM cpu WHERE host = %s AND time >= to_timestamp(%s) AND time < to_timestamp(%s)"
    lat = []
    for _ in range(a.iterations):
        t = time.perf_counter()
        rows = c.execute(q, ("h3", lo, hi), prepare=True).fetchall()
        lat.append(time.perf_counter() - t)
        assert len(rows) == 360, len(rows)
    out["point"] = lat
    data = copy_text(a.rows)
    t = time.perf_counter()
    with c.cursor().copy("COPY big (time, host, v) FROM STDIN") as cp:
        for off in range(0, len(data), 1 << 20):
            cp.write(data[off:off + (1 << 20)])
    out["copy"] = time.perf_counter() - t
    assert c.execute("SELECT count(*) FROM big").fetchone()[0] == a.rows
    n_ins = min(a.rows, a.insert_rows)
    t = time.perf_counter()
    for start in range(0, n_ins, 1000):
        values = ",".join(f"(to_timestamp({T0 + i}), 'h{i % 10}', {i}.25)" for i in range(start, start + 1000))
        c.execute(f"INSERT INTO ins (time, host, v) VALUES {values}")
    out["insert"] = time.perf_counter() - t
    out["insert_rows"] = n_ins
    assert c.execute("SELECT count(*) FROM ins").fetchone()[0] == n_ins
    t = time.perf_counter()
    n = 0
    with c.cursor() as cur:
        for _ in cur.stream("SELECT time, host, v FROM big"):
            n += 1
    out["scan"] = time.perf_counter() - t
    assert n == a.rows
    return out


def copy_text_cpu():
    buf = io.StringIO()
    for h in range(SERIES):
        for i in range(POINTS):
            s = T0 + i * 10
            buf.write(f"{time.strftime('%Y-%m-%d %H:%M:%S', time.gmtime(s))}+00\th{h}\t{(i * 7 + h) % 100}.5\n")
    return buf.getvalue().encode()


def report(name, r, a):
    print(f"{name}: point query median {median_ms(r['point']):.2f} ms, p99 {p99_ms(r['point']):.2f} ms ({a.iterations} runs, 360 rows); "
          f"COPY {a.rows / r['copy']:,.0f} rows/s; INSERT {r['insert_rows'] / r['insert']:,.0f} rows/s; "
          f"large result {a.rows / r['scan']:,.0f} rows/s ({a.rows} rows)")


def main():
    ap = argparse.ArgumentParser()
    target = os.environ.get("CARGO_TARGET_DIR", str(Path.home() / ".cache/sundial/target"))
    ap.add_argument("--bin", default=os.environ.get("SUNDIAL_BIN", f"{target}/debug/sundial"))
    ap.add_argument("--rows", type=int, default=200_000, help="rows of the COPY and of the large result (1000000 for release)")
    ap.add_argument("--insert-rows", type=int, default=20_000)
    ap.add_argument("--iterations", type=int, default=200)
    ap.add_argument("--compare-postgres", action="store_true", help=f"also run PostgreSQL 15 from {PG_BIN}")
    a = ap.parse_args()
    build = "DEBUG build: not a speed claim" if "/debug/" in a.bin else "release build"
    print(f"# Sundial PostgreSQL wire protocol figures ({build}: {a.bin})")
    root = tempfile.mkdtemp(prefix="sundial-pgbench-")
    procs = []
    try:
        p, url, port = start_sundial(a.bin, root + "/sundial")
        procs.append(p)
        http_sql(url, None, "CREATE DATABASE bench")
        with psycopg.connect(f"host=127.0.0.1 port={port} dbname=bench user=bench", autocommit=True) as c:
            s = workloads(c, a)
        lo, hi = T0 + 3600 * 5, T0 + 3600 * 6
        lit = f"SELECT time, usage FROM cpu WHERE host = 'h3' AND time >= to_timestamp({lo}) AND time < to_timestamp({hi})"
        lat_http = []
        for _ in range(a.iterations):
            t = time.perf_counter()
            assert len(http_sql(url, "bench", lit)) == 360
            lat_http.append(time.perf_counter() - t)
        report("sundial (pgwire)", s, a)
        print(f"sundial (HTTP /api/v1/sql, JSON): point query median {median_ms(lat_http):.2f} ms, p99 {p99_ms(lat_http):.2f} ms; "
              f"HTTP/pgwire median ratio {statistics.median(lat_http) / statistics.median(s['point']):.2f}")
        if a.compare_postgres:
            pg_root = tempfile.mkdtemp(prefix="sundial-pgbench-pg-")
            pp, pport = start_postgres(pg_root)
            procs.append(pp)
            ddl = ("CREATE TABLE cpu (time timestamptz NOT NULL, host text, usage float8)",
                   "CREATE INDEX ON cpu (host, time)",
                   "CREATE TABLE big (time timestamptz NOT NULL, host text, v float8)",
                   "CREATE TABLE ins (time timestamptz NOT NULL, host text, v float8)")
            with psycopg.connect(f"host=127.0.0.1 port={pport} dbname=postgres user=bench", autocommit=True) as c:
                g = workloads(c, a, ddl)
            report("postgresql 15", g, a)
            print("sundial/postgres ratios (>1: Sundial takes longer or does less per second): "
                  f"point latency {statistics.median(s['point']) / statistics.median(g['point']):.2f}, "
                  f"COPY time {s['copy'] / g['copy']:.2f}, INSERT time {s['insert'] / g['insert']:.2f}, "
                  f"large-result time {s['scan'] / g['scan']:.2f}")
    finally:
        for p in procs:
            p.terminate()
            p.wait(60)
        shutil.rmtree(root, ignore_errors=True)
        if a.compare_postgres and "pg_root" in locals():
            shutil.rmtree(pg_root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
