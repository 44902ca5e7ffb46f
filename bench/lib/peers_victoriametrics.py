"""VictoriaMetrics single-node, built from its Go module (the module proxy serves the source; `go install` is
refused because of its replace directives, so it is built as the main module). Recipe: /work/shared/PEERS.md.

TSBS's victoriametrics tools write InfluxDB line protocol to /write (each field becomes a metric
`cpu_<field>`) and query with PromQL range queries. There are no lastpoint, high-cpu or
groupby-orderby-limit queries for it in TSBS, and its answers are not cross-checked: a PromQL range query
evaluates each step over the window (t − step, t], where InfluxQL and SQL buckets are [t, t + step).
"""

import json
import os
import subprocess
import urllib.parse
import urllib.request
from pathlib import Path

from peers_common import Peer, PeerInstallError, Server, failure_text, http_ok, run
from procutil import cache_dir, free_port

VERSION = "v1.122.0"
MODULE = "github.com/VictoriaMetrics/VictoriaMetrics"


def bin_path() -> Path:
    return cache_dir() / "peers" / "victoriametrics" / VERSION / "victoria-metrics"


class VictoriaMetricsPeer(Peer):
    name = "victoriametrics"
    title = f"VictoriaMetrics {VERSION}"
    tsbs_format = "victoriametrics"
    loader = "tsbs_load_victoriametrics"
    runner = "tsbs_run_queries_victoriametrics"
    answers_comparable = False
    notes = ["PromQL range queries: each step aggregates the window (t − step, t], InfluxQL/SQL buckets are "
             "[t, t + step): answers are not cross-checked. TSBS has no lastpoint, high-cpu-* or "
             "groupby-orderby-limit queries for VictoriaMetrics (n/a).",
             "Acknowledges writes before they are on disk (in-memory buffers flushed about every second).",
             "Settled disk: after /internal/force_flush and /internal/force_merge."]

    def install(self, log):
        if not bin_path().is_file():
            try:
                mod = json.loads(run(["go", "mod", "download", "-json", f"{MODULE}@{VERSION}"], log,
                                     cwd=cache_dir()).stdout)
                src = Path(mod["Dir"])
                work = bin_path().parent / "src"
                work.parent.mkdir(parents=True, exist_ok=True)
                if work.exists():
                    subprocess.run(["chmod", "-R", "u+w", work], check=False)
                    subprocess.run(["rm", "-rf", work], check=True)
                subprocess.run(["cp", "-r", src, work], check=True)
                subprocess.run(["chmod", "-R", "u+w", work], check=True)
                env = dict(os.environ, GOFLAGS="-mod=mod", CGO_ENABLED="0")
                run(["nice", "-n", "10", "go", "build", "-ldflags",
                     f"-X {MODULE}/lib/buildinfo.Version=victoria-metrics-{VERSION}", "-o", bin_path(),
                     "./app/victoria-metrics"], log, cwd=work, env=env)
                subprocess.run(["rm", "-rf", work], check=False)
            except Exception as e:  # noqa: BLE001
                raise PeerInstallError(failure_text(e)) from e
        return VERSION

    def settings(self):
        return {"flags": "-retentionPeriod=100y (TSBS data is from 2016; the default 1 month would drop it), "
                         "all else default",
                "recommended": "VictoriaMetrics docs: defaults for single-node; no tuning flags needed"}

    def make_server(self, root):
        root = Path(root)
        root.mkdir(parents=True, exist_ok=True)
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        argv = [bin_path(), f"-storageDataPath={root / 'data'}", f"-httpListenAddr=127.0.0.1:{port}",
                "-retentionPeriod=100y"]
        return Server("victoriametrics", argv, root / "vm.log", lambda: http_ok(url + "/health"),
                      [root / "data"], url=url)

    def load_argv(self, server, workers, batch):
        return [self.loader, f"--urls={server.url}/write", f"--workers={workers}", f"--batch-size={batch}"]

    def count(self, server):
        # Samples of one field over the whole data range: the window (end − span − 1 s, end − 1 s] holds them all.
        start, end = self.data_range
        span = end - start
        q = urllib.parse.urlencode({"query": f"sum(count_over_time(cpu_usage_user[{span + 1}s]))",
                                    "time": end - 1, "nocache": 1})
        with urllib.request.urlopen(f"{server.url}/api/v1/query?{q}", timeout=120) as r:
            res = json.loads(r.read())["data"]["result"]
        return int(float(res[0]["value"][1])) if res else 0

    def settle(self, server, log):
        for path in ("/internal/force_flush", "/internal/force_merge"):
            try:
                urllib.request.urlopen(server.url + path, timeout=600).read()
            except OSError as e:
                log(f"  victoriametrics {path}: {e}")

    def query_argv(self, server, path, workers):
        return [self.runner, f"--file={path}", f"--urls={server.url}", f"--workers={workers}"]

    def responses_stream(self):
        return "stderr"
