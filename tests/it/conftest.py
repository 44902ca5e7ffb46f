"""Fixtures that run the real `sundial` binary on a scratch directory and an ephemeral loopback port."""

import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import pytest
import requests

ROOT = Path(__file__).resolve().parents[2]


def sundial_bin() -> str:
    """The binary under test: $SUNDIAL_BIN, else the debug build in the cargo target dir."""
    if os.environ.get("SUNDIAL_BIN"):
        return os.environ["SUNDIAL_BIN"]
    target = os.environ.get("CARGO_TARGET_DIR", str(Path.home() / ".cache/sundial/target"))
    path = Path(target) / "debug" / "sundial"
    if not path.exists():
        raise RuntimeError(f"{path} not found: run `cargo build -p sundial` or set SUNDIAL_BIN")
    return str(path)


class Server:
    """One running `sundial serve` process."""

    def __init__(self, data_dir: Path, extra_args=()):
        self.data_dir = Path(data_dir)
        self.extra_args = list(extra_args)
        self.proc = None
        self.url = None
        self.log_path = self.data_dir.parent / f"{self.data_dir.name}.log"

    def start(self, timeout=60):
        # An ephemeral PostgreSQL port too, so parallel servers never fight over the default 8766.
        args = [sundial_bin(), "serve", "--data-dir", str(self.data_dir), "--http-addr", "127.0.0.1:0", "--pg-addr", "127.0.0.1:0", *self.extra_args]
        self.log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=self.log)
        deadline = time.time() + timeout
        while time.time() < deadline:
            line = self.proc.stdout.readline().decode()
            if not line:
                break
            m = re.search(r"listening on (http://\S+)", line)
            if m:
                self.url = m.group(1)
                return self
        self.proc.kill()
        raise RuntimeError(f"sundial did not start; log: {self.log_path.read_text()[-3000:]}")

    def kill9(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc:
            self.proc.stdout.close()
            self.log.close()

    # --- client helpers -------------------------------------------------------------------------
    def write(self, db, body, params=None, headers=None, path="/write"):
        p = {"db": db} if path == "/write" else {"bucket": db, "org": "o"}
        p.update(params or {})
        return requests.post(self.url + path, params=p, data=body, headers=headers or {}, timeout=60)

    def sql(self, q, db=None, fmt=None, method="GET"):
        params = {"q": q}
        if db:
            params["db"] = db
        if fmt:
            params["format"] = fmt
        if method == "GET":
            return requests.get(self.url + "/api/v1/sql", params=params, timeout=60)
        return requests.post(self.url + "/api/v1/sql", params={k: v for k, v in params.items() if k != "q"}, data=q, timeout=60)

    def rows(self, q, db=None):
        r = self.sql(q, db)
        assert r.status_code == 200, f"{q}: {r.status_code} {r.text}"
        return r.json()


@pytest.fixture
def data_dir():
    d = Path(tempfile.mkdtemp(prefix="sundial-it-"))
    yield d / "data"
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def server(data_dir):
    s = Server(data_dir).start()
    yield s
    s.stop()


@pytest.fixture
def make_server(data_dir):
    """Factory for tests that restart the server on the same directory."""
    started = []

    def make(*extra_args):
        s = Server(data_dir, extra_args).start()
        started.append(s)
        return s

    yield make
    for s in started:
        s.stop()
