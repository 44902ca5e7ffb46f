"""Fixtures for the PostgreSQL wire-protocol suite: the real `sundial` binary on ephemeral loopback ports
(HTTP and PostgreSQL), and a minimal raw protocol client for the malformed-input tests."""

import os
import re
import shutil
import socket
import struct
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

import pytest
import requests

ROOT = Path(__file__).resolve().parents[2]


def sundial_bin() -> str:
    if os.environ.get("SUNDIAL_BIN"):
        return os.environ["SUNDIAL_BIN"]
    target = os.environ.get("CARGO_TARGET_DIR", str(Path.home() / ".cache/sundial/target"))
    path = Path(target) / "debug" / "sundial"
    if not path.exists():
        raise RuntimeError(f"{path} not found: run `cargo build -p sundial` or set SUNDIAL_BIN")
    return str(path)


class PgServer:
    """One `sundial serve` process; `url` is its HTTP base, `pg_port` its PostgreSQL port."""

    def __init__(self, data_dir: Path, extra_args=()):
        self.data_dir = Path(data_dir)
        self.extra_args = list(extra_args)
        self.log_path = self.data_dir.parent / f"{self.data_dir.name}.log"
        self.proc = None
        self.url = None
        self.pg_port = None

    def start(self, timeout=60):
        pg = [] if "--pg-addr" in self.extra_args else ["--pg-addr", "127.0.0.1:0"]
        args = [sundial_bin(), "serve", "--data-dir", str(self.data_dir), "--http-addr", "127.0.0.1:0", *pg, *self.extra_args]
        self.log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=self.log)
        deadline = time.time() + timeout
        while time.time() < deadline and self.pg_port is None:
            line = self.proc.stdout.readline().decode()
            if not line:
                break
            if m := re.search(r"sundial listening on (http://\S+)", line):
                self.url = m.group(1)
            if m := re.search(r"sundial postgres listening on \S+:(\d+)", line):
                self.pg_port = int(m.group(1))
        if self.pg_port is None:
            self.proc.kill()
            raise RuntimeError(f"sundial did not start; log: {self.log_path.read_text()[-3000:]}")
        return self

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc:
            self.proc.stdout.close()
            self.log.close()

    def alive(self):
        return self.proc.poll() is None

    def sql(self, q, db=None):
        params = {"q": q}
        if db:
            params["db"] = db
        r = requests.get(self.url + "/api/v1/sql", params=params, timeout=60)
        assert r.status_code == 200, f"{q}: {r.status_code} {r.text}"
        return r.json()

    def write(self, db, body, precision="s"):
        r = requests.post(self.url + "/write", params={"db": db, "precision": precision}, data=body, timeout=60)
        assert r.status_code == 204, r.text
        return r

    def new_db(self, prefix="t"):
        name = f"{prefix}_{uuid.uuid4().hex[:8]}"
        self.sql(f"CREATE DATABASE {name}")
        return name

    def dsn(self, db, user="tester", **extra):
        parts = [f"host=127.0.0.1", f"port={self.pg_port}", f"dbname={db}", f"user={user}"]
        parts += [f"{k}={v}" for k, v in extra.items()]
        return " ".join(parts)


@pytest.fixture(scope="session")
def pg_server():
    d = Path(tempfile.mkdtemp(prefix="sundial-pg-"))
    s = PgServer(d / "data").start()
    yield s
    s.stop()
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def make_server():
    """Servers with their own flags (passwords, addresses); stopped after the test."""
    d = Path(tempfile.mkdtemp(prefix="sundial-pg-"))
    started = []

    def make(*extra_args, name="data"):
        s = PgServer(d / name, extra_args).start()
        started.append(s)
        return s

    yield make
    for s in started:
        s.stop()
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def db(pg_server):
    """A fresh database with a small `cpu` table written by line protocol."""
    name = pg_server.new_db()
    pg_server.write(name, "\n".join([
        "cpu,host=a,region=eu usage=12.5,cores=8i 1700000000",
        "cpu,host=b,region=eu usage=70.25,cores=16i 1700000000",
        "cpu,host=a,region=eu usage=15.0,cores=8i 1700000060",
        "cpu,host=b,region=us usage=1e20,cores=4i 1700000120",
    ]))
    return name


# --- a raw protocol client ------------------------------------------------------------------------

def startup_packet(db, user="raw"):
    body = struct.pack("!i", 196608)
    for k, v in (("user", user), ("database", db)):
        body += k.encode() + b"\0" + v.encode() + b"\0"
    body += b"\0"
    return struct.pack("!i", len(body) + 4) + body


def message(ty: bytes, body: bytes) -> bytes:
    return ty + struct.pack("!i", len(body) + 4) + body


class RawConn:
    """A socket speaking just enough protocol to send broken messages and read what comes back."""

    def __init__(self, port, db, timeout=30):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.buf = b""
        self.sock.sendall(startup_packet(db))
        self.pid = self.secret = None
        for ty, body in self.read_until(b"Z"):
            if ty == b"K":
                self.pid, self.secret = struct.unpack("!ii", body)
            assert ty != b"E", body

    def recv_msg(self):
        while len(self.buf) < 5:
            chunk = self.sock.recv(65536)
            if not chunk:
                return None
            self.buf += chunk
        ty, n = self.buf[:1], struct.unpack("!i", self.buf[1:5])[0]
        while len(self.buf) < 1 + n:
            chunk = self.sock.recv(65536)
            if not chunk:
                return None
            self.buf += chunk
        body, self.buf = self.buf[5:1 + n], self.buf[1 + n:]
        return ty, body

    def read_until(self, stop=b"Z"):
        out = []
        while True:
            m = self.recv_msg()
            if m is None:
                return out
            out.append(m)
            if m[0] == stop:
                return out

    def send(self, data: bytes):
        self.sock.sendall(data)

    def query(self, sql):
        self.send(message(b"Q", sql.encode() + b"\0"))
        return self.read_until(b"Z")

    def close(self):
        self.sock.close()


def error_fields(body: bytes) -> dict:
    fields = {}
    for part in body.split(b"\0"):
        if part:
            fields[chr(part[0])] = part[1:].decode()
    return fields


@pytest.fixture
def raw(pg_server, db):
    conns = []

    def connect():
        c = RawConn(pg_server.pg_port, db)
        conns.append(c)
        return c

    yield connect
    for c in conns:
        c.close()
