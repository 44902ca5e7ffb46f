"""Sundial's server as a benchmark / differential-test target.

Binary: `$SUNDIAL_BIN`, else `${CARGO_TARGET_DIR:-$SUNDIAL_CACHE/target}/release/sundial` (built with
`cargo build --release -p sundial` from the repository root when asked to).
Started as `sundial serve --data-dir DIR --http-addr 127.0.0.1:PORT`; ready when `/ping` answers 204.
"""

import os
import subprocess
from pathlib import Path

from procutil import ServerProcess, cache_dir, free_port

REPO_ROOT = Path(__file__).resolve().parents[2]


def target_dir() -> Path:
    return Path(os.environ.get("CARGO_TARGET_DIR", cache_dir() / "target"))


def default_binary(profile: str = "release") -> Path:
    return target_dir() / profile / "sundial"


def find_binary(build: bool = False, log=print, allow_debug: bool = False) -> Path:
    """The binary to run. With `build`, run the release build first (a no-op when it is up to date)."""
    if os.environ.get("SUNDIAL_BIN"):
        path = Path(os.environ["SUNDIAL_BIN"])
        if not path.is_file():
            raise FileNotFoundError(f"SUNDIAL_BIN={path} does not exist")
        return path
    if build:
        argv = ["nice", "-n", "10", "cargo", "build", "--release", "-p", "sundial"]
        log(f"building Sundial: (cd {REPO_ROOT} && {' '.join(argv)})")
        subprocess.run(argv, cwd=REPO_ROOT, check=True)
    candidates = [default_binary("release")] + ([default_binary("debug")] if allow_debug else [])
    for path in candidates:
        if path.is_file():
            return path
    raise FileNotFoundError(
        f"no Sundial binary at {' or '.join(map(str, candidates))}: run `cargo build --release -p sundial` "
        f"in {REPO_ROOT} or set SUNDIAL_BIN")


class Sundial(ServerProcess):
    name = "sundial"

    def __init__(self, root, binary):
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.binary = Path(binary)
        self.http_port = free_port()
        self.url = f"http://127.0.0.1:{self.http_port}"
        self.data_dirs = [self.root / "data"]
        # --flush-idle-secs 10 and --compact-full-write-cold-secs 20: InfluxDB's cache-snapshot and
        # compact-full write-cold durations in this harness (peers_common.INFLUXDB_OVERRIDES), so the
        # "settled" disk figure is compressed segments, not the WAL, and the newest partition is one file
        # as InfluxDB's newest shard is fully compacted. Both fire only after writes stop.
        super().__init__([self.binary, "serve", "--data-dir", self.root / "data",
                          "--http-addr", f"127.0.0.1:{self.http_port}", "--pg-addr", "127.0.0.1:0", "--flush-idle-secs", "10",
                          "--compact-full-write-cold-secs", "20"],
                         self.root / "sundial.log", self.url + "/ping")
