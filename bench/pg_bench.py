#!/usr/bin/env python3
"""Figures for the PostgreSQL wire protocol (issue 6): point-query latency through psycopg (prepared
statement, one series, 1 h window) vs the same query over HTTP SQL; rows/s of a large result streamed to the
client; INSERT and COPY ingest rows/s.

    bench/pg_bench.py [--bin PATH] [--rows 1000000] [--iterations 200]

Starts its own `sundial serve` on a scratch directory and ephemeral ports. Needs psycopg 3
(tests/requirements.txt). The answers are checked, not only timed. Numbers from a debug build
(the default binary) are not speed claims: use `cargo build --release` and `--bin target/release/sundial`.
PostgreSQL 15 on the same data is not compared here yet.
"""

import argparse
import io
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path

import psycopg

T0 = 1_700_000_000  # seconds


def start(binary, data_dir):
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


def http_sql(url, db, q):
    u = url + "/api/v1/sql?" + urllib.parse.urlencode({"db": db, "q": q})
    with urllib.request.urlopen(u, timeout=120) as r:
        return json.loads(r.read())


def http_write(url, db, body):
    req = urllib.request.Request(url + "/write?" + urllib.parse.urlencode({"db": db, "precision": "s"}), data=body.encode(), method="POST")
    with urllib.request.urlopen(req, timeout=600) as r:
        assert r.status == 204


def pct(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, int(p * len(v)))]


def main():
    ap = argparse.ArgumentParser()
    target = os.environ.get("CARGO_TARGET_DIR", str(Path.home() / ".cache/sundial/target"))
    ap.add_argument("--bin", default=os.environ.get("SUNDIAL_BIN", f"{target}/debug/sundial"))
    ap.add_argument("--rows", type=int, default=200_000, help="rows of the large result and of the COPY (1000000 for release)")
    ap.add_argument("--iterations", type=int, default=200)
    a = ap.parse_args()
    build = "DEBUG build: not a speed claim" if "/debug/" in a.bin else "release build"
    d = tempfile.mkdtemp(prefix="sundial-pgbench-")
    proc, url, port = start(a.bin, d + "/data")
    try:
        http_sql(url, None, "CREATE DATABASE bench")
        # 10 series × 1 point every 10 s for 1 day = 86 400 rows for the point queries
        lines = [f"cpu,host=h{h} usage={(i * 7 + h) % 100}.5 {T0 + i * 10}" for h in range(10) for i in range(8640)]
        http_write(url, "bench", "\n".join(lines))
        dsn = f"host=127.0.0.1 port={port} dbname=bench user=bench"
        print(f"# sundial PostgreSQL wire protocol figures ({build}; {a.bin})")
        with psycopg.connect(dsn, autocommit=True) as c:
            lo, hi = T0 + 3600 * 5, T0 + 3600 * 6
            q = "SELECT time, usage FROM cpu WHERE host = %s AND time >= to_timestamp(%s) AND time < to_timestamp(%s)"
            lat_pg = []
            for i in range(a.iterations):
                t = time.perf_counter()
                rows = c.execute(q, ("h3", lo, hi), prepare=True).fetchall()
                lat_pg.append(time.perf_counter() - t)
                assert len(rows) == 360, len(rows)
            lit = f"SELECT time, usage FROM cpu WHERE host = 'h3' AND time >= to_timestamp({lo}) AND time < to_timestamp({hi})"
            lat_http = []
            for i in range(a.iterations):
                t = time.perf_counter()
                rows = http_sql(url, "bench", lit)
                lat_http.append(time.perf_counter() - t)
                assert len(rows) == 360
            print(f"point query (1 series, 1 h = 360 rows), {a.iterations} runs: psycopg prepared median {statistics.median(lat_pg) * 1e3:.2f} ms p99 {pct(lat_pg, 0.99) * 1e3:.2f} ms; "
                  f"HTTP /api/v1/sql median {statistics.median(lat_http) * 1e3:.2f} ms p99 {pct(lat_http, 0.99) * 1e3:.2f} ms; ratio HTTP/pg {statistics.median(lat_http) / statistics.median(lat_pg):.2f}")

            # COPY ingest
            buf = io.StringIO()
            for i in range(a.rows):
                buf.write(f"2024-01-01 00:00:00+00\th{i % 100}\t{i}.5\n".replace("00:00:00", f"{(i // 100) // 3600 % 24:02d}:{(i // 100) // 60 % 60:02d}:{(i // 100) % 60:02d}"))
            data = buf.getvalue().encode()
            cur = c.cursor()
            t = time.perf_counter()
            with cur.copy("COPY big (time, host, v) FROM STDIN") as cp:
                for off in range(0, len(data), 1 << 20):
                    cp.write(data[off:off + (1 << 20)])
            dt_copy = time.perf_counter() - t
            got = c.execute("SELECT count(*) FROM big").fetchone()[0]
            print(f"COPY FROM STDIN: {a.rows} rows in {dt_copy:.2f} s = {a.rows / dt_copy:,.0f} rows/s (table holds {got} rows after dedup on (series, time))")

            # INSERT ingest: multi-row statements of 1000 rows
            n_ins = min(a.rows, 50_000)
            t = time.perf_counter()
            for start_i in range(0, n_ins, 1000):
                values = ",".join(f"(to_timestamp({T0 + i}), 'h{i % 10}', {i}.25)" for i in range(start_i, start_i + 1000))
                c.execute(f"INSERT INTO ins (time, host, v) VALUES {values}")
            dt_ins = time.perf_counter() - t
            assert c.execute("SELECT count(*) FROM ins").fetchone()[0] == n_ins
            print(f"INSERT (1000-row statements): {n_ins} rows in {dt_ins:.2f} s = {n_ins / dt_ins:,.0f} rows/s")

            # large result streamed
            t = time.perf_counter()
            n = 0
            with c.cursor() as cur2:
                for _ in cur2.stream("SELECT time, host, v FROM big"):
                    n += 1
            dt_sel = time.perf_counter() - t
            assert n == got
            print(f"large result: {n} rows in {dt_sel:.2f} s = {n / dt_sel:,.0f} rows/s (psycopg stream, text format)")
    finally:
        proc.terminate()
        proc.wait(60)
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
