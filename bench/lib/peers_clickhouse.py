"""ClickHouse from Debian's packages (18.16.1, from 2018: an old engine), driven by TSBS's clickhouse tools.
Recipe: /work/shared/PEERS.md and peers.sh (`start_clickhouse`).

The packaged config.xml is copied with every port moved to a free loopback port and every path into the
scratch dir. TSBS builds its DSN as `tcp://HOST:9000?…`: passing `--host='127.0.0.1:PORT?x='` pushes the
hard-coded `:9000` into a dummy parameter. When the apt package cannot be installed there is no usable
fallback: the embedded `chdb` from PyPI is a Python library that TSBS's Go tools cannot drive, so the peer is
reported as not installed.
"""

import os
import re
import shutil
import subprocess
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

from peers_common import DB, Peer, PeerInstallError, Server, failure_text, http_ok, run
from procutil import free_port

PACKAGED_CONFIG = Path("/etc/clickhouse-server/config.xml")
PACKAGED_USERS = Path("/etc/clickhouse-server/users.xml")


class ClickHousePeer(Peer):
    name = "clickhouse"
    title = "ClickHouse"
    tsbs_format = "clickhouse"
    loader = "tsbs_load_clickhouse"
    runner = "tsbs_run_queries_clickhouse"
    notes = ["ClickHouse 18.16 is Debian 12's package, from 2018: far behind current ClickHouse; a modern "
             "engine (chdb from PyPI) is in-process only and TSBS's tools cannot drive it.",
             "Acknowledges an INSERT once the part is written, without fsync (default).",
             "Settled disk: after OPTIMIZE TABLE … FINAL (merges all parts), with merged-away parts deleted after "
             "5 s instead of 8 min (old_parts_lifetime)."]

    def install(self, log):
        if shutil.which("clickhouse-server") is None or not PACKAGED_CONFIG.is_file():
            try:
                env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
                run(["apt-get", "update", "-qq"], log, env=env)
                run(["apt-get", "install", "-y", "-qq", "clickhouse-server", "clickhouse-client"], log, env=env)
            except Exception as e:  # noqa: BLE001
                raise PeerInstallError(failure_text(e) + " (chdb from PyPI is no substitute: in-process only, "
                                                         "TSBS cannot drive it)") from e
        p = subprocess.run(["dpkg-query", "-W", "-f=${Version}", "clickhouse-server"], capture_output=True, text=True)
        version = p.stdout.strip() or "unknown"
        self.title = f"ClickHouse {version.split('+')[0]}"
        return version

    def settings(self):
        return {"config.xml": "Debian's packaged config, ports and paths moved; merge_tree old_parts_lifetime 5 s, "
                              "cleanup_delay_period 1 s (defaults 480 s, 30 s: the settled size would include "
                              "merged-away parts); MergeTree tables as tsbs_load_clickhouse creates them; all else "
                              "default",
                "recommended": "ClickHouse docs: defaults; batches of ≥ 1,000 rows per INSERT (10,000 here)"}

    def make_server(self, root):
        root = Path(root)
        for d in ("etc", "data", "log", "tmp"):
            (root / d).mkdir(parents=True, exist_ok=True)
        shutil.copy(PACKAGED_USERS, root / "etc" / "users.xml")
        self.http_port, self.tcp_port = free_port(), free_port()
        text = PACKAGED_CONFIG.read_text()
        text = re.sub(r"<http_port>\d+</http_port>", f"<http_port>{self.http_port}</http_port>", text)
        text = re.sub(r"<tcp_port>\d+</tcp_port>", f"<tcp_port>{self.tcp_port}</tcp_port>", text)
        text = re.sub(r"<interserver_http_port>\d+</interserver_http_port>",
                      f"<interserver_http_port>{free_port()}</interserver_http_port>", text)
        text = re.sub(r"<listen_host>[^<]*</listen_host>", "", text)
        # Merged-away parts are deleted old_parts_lifetime (480 s) after a merge, checked every
        # cleanup_delay_period (30 s): shortened, like InfluxDB's idle timers, so that the settled size is the
        # merged table and not the parts it replaced. Only deletion after a merge is sooner.
        text = text.replace("</yandex>", "<listen_host>127.0.0.1</listen_host>\n<merge_tree><old_parts_lifetime>5"
                                         "</old_parts_lifetime><cleanup_delay_period>1</cleanup_delay_period>"
                                         "</merge_tree>\n</yandex>", 1)
        text = text.replace("/var/lib/clickhouse/tmp/", f"{root}/tmp/").replace("/var/lib/clickhouse/", f"{root}/data/")
        text = text.replace("/var/log/clickhouse-server/", f"{root}/log/")
        (root / "etc" / "config.xml").write_text(text)
        url = f"http://127.0.0.1:{self.http_port}"
        return Server("clickhouse", ["clickhouse-server", f"--config-file={root / 'etc' / 'config.xml'}"],
                      root / "stdout.log", lambda: http_ok(url + "/ping"), [root / "data"], url=url, cwd=root)

    def sql(self, server, q):
        try:
            req = urllib.request.Request(server.url + "/", data=q.encode(), method="POST")  # GET is read-only
            with urllib.request.urlopen(req, timeout=600) as r:
                return r.read().decode().strip()
        except urllib.error.HTTPError as e:
            raise RuntimeError(f"ClickHouse: {q}: {e.code} {e.read().decode(errors='replace')[:500]}") from e

    def load_argv(self, server, workers, batch):
        return [self.loader, f"--host=127.0.0.1:{self.tcp_port}?x=", "--user=default", "--password=",
                f"--db-name={DB}", f"--workers={workers}", f"--batch-size={batch}"]

    def count(self, server):
        try:
            return int(self.sql(server, f"SELECT count() FROM {DB}.cpu") or 0)
        except (OSError, RuntimeError):
            return 0  # no table yet

    def settle(self, server, log):
        self.sql(server, f"OPTIMIZE TABLE {DB}.cpu FINAL")

    def query_argv(self, server, path, workers):
        return [self.runner, f"--file={path}", f"--hosts=127.0.0.1:{self.tcp_port}?x=", "--user=default",
                f"--db-name={DB}", f"--workers={workers}"]
