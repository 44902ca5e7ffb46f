"""InfluxDB 1.x (Debian's `influxdb` package, 1.6.7~rc0): install, configure on scratch dirs, start, stop.

The one copy of this logic; `bench/tsbs` and `tests/compat/` both import it. Adapted from
/work/shared/peers.sh (`start_influx`): generate the default config with `influxd config`, then move every
port to a free loopback port and every directory into the scratch dir. Also switched off, as there:
the `_internal` monitor database (it would show up in SHOW DATABASES and cost disk and CPU during a benchmark),
the per-request HTTP log and the query log.
"""

import os
import re
import shutil
import subprocess
from pathlib import Path

from procutil import ServerProcess, free_port


def ensure_installed(log=print) -> str:
    """Install `influxdb influxdb-client` with apt-get if `influxd` is missing; return `influxd version`."""
    if shutil.which("influxd") is None:
        log("influxd not found: apt-get install -y influxdb influxdb-client")
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        subprocess.run(["apt-get", "update", "-qq"], check=True, env=env)
        subprocess.run(["apt-get", "install", "-y", "-qq", "influxdb", "influxdb-client"], check=True, env=env)
    return subprocess.run(["influxd", "version"], capture_output=True, text=True, check=True).stdout.strip()


def _set_in_section(text: str, section: str, key: str, value: str) -> str:
    """Replace `key = …` inside `[section]` (or at top level when section is ''); fail if it is not there."""
    out, current, done = [], "", False
    for line in text.splitlines():
        stripped = line.strip()
        m = re.match(r"^\[\[?([^\]]+)\]\]?$", stripped)
        if m:
            current = m.group(1)
        elif current == section and re.match(rf"^{re.escape(key)}\s*=", stripped) and not done:
            indent = line[: len(line) - len(line.lstrip())]
            line, done = f"{indent}{key} = {value}", True
        out.append(line)
    if not done:
        raise RuntimeError(f"influxd config: no `{key}` in [{section}]")
    return "\n".join(out) + "\n"


def make_config(root: Path, http_port: int, rpc_port: int, overrides=()) -> Path:
    """Write `root/influxdb.conf`: defaults from `influxd config`, ports and dirs moved to `root`, then
    `overrides`, a list of (section, key, TOML value) — section '' is the top level."""
    text = subprocess.run(["influxd", "config"], capture_output=True, text=True, check=True).stdout
    edits = [
        ("", "bind-address", f'"127.0.0.1:{rpc_port}"'),
        ("", "reporting-enabled", "false"),
        ("meta", "dir", f'"{root}/meta"'),
        ("data", "dir", f'"{root}/data"'),
        ("data", "wal-dir", f'"{root}/wal"'),
        ("data", "query-log-enabled", "false"),
        ("monitor", "store-enabled", "false"),
        ("http", "bind-address", f'"127.0.0.1:{http_port}"'),
        ("http", "log-enabled", "false"),
        ("ifql", "bind-address", f'"127.0.0.1:{free_port()}"'),
        *overrides,
    ]
    for section, key, value in edits:
        text = _set_in_section(text, section, key, value)
    path = root / "influxdb.conf"
    path.write_text(text)
    return path


class InfluxDB(ServerProcess):
    """`influxd run -config F` on `root` (created); data lives in root/{meta,data,wal}."""

    name = "influxdb"

    def __init__(self, root, overrides=()):
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.overrides = list(overrides)
        self.http_port = free_port()
        self.config_path = make_config(self.root, self.http_port, free_port(), self.overrides)
        self.url = f"http://127.0.0.1:{self.http_port}"
        self.data_dirs = [self.root / "meta", self.root / "data", self.root / "wal"]
        super().__init__(["influxd", "run", "-config", self.config_path], self.root / "influxd.log",
                         self.url + "/ping")

    def start(self, timeout_s: float = 60.0):
        try:
            return super().start(timeout_s)
        except RuntimeError as e:
            if "bind: address already in use" in self.log_tail():
                # Lost a race for a port between free_port() and bind(): choose new ones once.
                self.http_port = free_port()
                self.config_path = make_config(self.root, self.http_port, free_port(), self.overrides)
                self.url = f"http://127.0.0.1:{self.http_port}"
                self.ping_url = self.url + "/ping"
                return super().start(timeout_s)
            raise e
