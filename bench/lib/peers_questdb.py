"""QuestDB from Maven Central (the server jar runs on the JDK already here), driven by TSBS's questdb tools.

Recipe from /work/shared/PEERS.md: `mvn dependency:copy` of org.questdb:questdb, then
`java -p questdb-VER.jar -m io.questdb/io.questdb.ServerMain -d ROOT`, ports in ROOT/conf/server.conf.
`tsbs_load_questdb` writes InfluxDB line protocol over raw TCP (ILP) and stops its clock when the bytes are
sent; QuestDB applies rows to its WAL tables asynchronously, so only the count query says when they are
queryable. This TSBS revision emits `SAMPLE BY … GROUP BY timestamp, hostname` in the double-groupby queries,
which QuestDB >= 8 rejects: the GROUP BY is blanked with spaces of the same length in the gob file.
"""

import json
import shutil
import urllib.parse
import urllib.request
from pathlib import Path

from peers_common import Peer, PeerInstallError, Server, failure_text, http_ok, run
from procutil import cache_dir, free_port

VERSION = "9.3.4"
HEAP = "-Xmx4g"
GROUPBY_FROM = b"GROUP+BY+timestamp%2C+hostname"
GROUPBY_TO = b" " * len(GROUPBY_FROM)


def jar_path() -> Path:
    return cache_dir() / "peers" / "questdb" / f"questdb-{VERSION}.jar"


class QuestDBPeer(Peer):
    name = "questdb"
    title = f"QuestDB {VERSION}"
    tsbs_format = "questdb"
    loader = "tsbs_load_questdb"
    runner = "tsbs_run_queries_questdb"
    settled_disk = "after_stop"  # column files are preallocated while open; a clean stop truncates them
    notes = ["tsbs_load_questdb sends ILP over TCP and stops its clock when the bytes are written to the socket "
             "(no acknowledgement); the committed figure (count query sees every row) is the comparable one.",
             "ILP over TCP does not fsync before acknowledging (nothing is acknowledged): weaker durability "
             "than Sundial's and InfluxDB's fsync-before-204.",
             "Settled disk: measured after a clean stop, as QuestDB preallocates column files while they are "
             "open (hundreds of MiB even for tiny tables); the after-settle figure is shown too.",
             "Symbol capacity left at QuestDB's default (256; ILP creates the table): its docs advise sizing it to "
             "the number of distinct values, so the high-cardinality scenarios 3-5 may understate QuestDB.",
             "double-groupby queries: `GROUP BY timestamp, hostname` after SAMPLE BY blanked (QuestDB >= 8 "
             "rejects it; SAMPLE BY already groups by the non-aggregated hostname)."]

    def install(self, log):
        if not jar_path().is_file():
            if shutil.which("mvn") is None or shutil.which("java") is None:
                raise PeerInstallError("QuestDB needs `mvn` and `java` (apt-get install maven openjdk-17-jre-headless)")
            jar_path().parent.mkdir(parents=True, exist_ok=True)
            try:
                run(["mvn", "-B", "-q", "dependency:copy", f"-Dartifact=org.questdb:questdb:{VERSION}",
                     f"-DoutputDirectory={jar_path().parent}"], log)
            except Exception as e:  # noqa: BLE001
                raise PeerInstallError(failure_text(e)) from e
        return VERSION

    def settings(self):
        return {"jvm": f"{HEAP} -XX:+UseParallelGC (java -p jar -m io.questdb/io.questdb.ServerMain)",
                "server.conf": "ports moved to free loopback ports, UDP ILP and telemetry off; all else default "
                               "(WAL tables, PARTITION BY DAY as ILP creates them)",
                "recommended": "QuestDB's TSBS guide: defaults, ILP over TCP for ingestion, REST /exec for queries"}

    def make_server(self, root):
        root = Path(root)
        (root / "conf").mkdir(parents=True, exist_ok=True)
        self.http_port, self.ilp_port = free_port(), free_port()
        (root / "conf" / "server.conf").write_text("\n".join([
            f"http.bind.to=127.0.0.1:{self.http_port}", f"http.min.net.bind.to=127.0.0.1:{free_port()}",
            f"line.tcp.net.bind.to=127.0.0.1:{self.ilp_port}", "line.udp.enabled=false",
            f"pg.net.bind.to=127.0.0.1:{free_port()}", "telemetry.enabled=false", ""]))
        url = f"http://127.0.0.1:{self.http_port}"
        argv = ["java", HEAP, "-XX:+UseParallelGC", "-p", jar_path(), "-m", "io.questdb/io.questdb.ServerMain",
                "-d", root]
        return Server("questdb", argv, root / "stdout.log",
                      lambda: http_ok(url + "/exec?query=" + urllib.parse.quote("select 1")),
                      [root / "db"], url=url)

    def sql(self, server, q):
        with urllib.request.urlopen(server.url + "/exec?query=" + urllib.parse.quote(q), timeout=60) as r:
            return json.loads(r.read())

    def load_argv(self, server, workers, batch):
        return [self.loader, f"--url={server.url}/", f"--ilp-bind-to=127.0.0.1:{self.ilp_port}",
                f"--workers={workers}", f"--batch-size={batch}"]

    def count(self, server):
        try:
            doc = self.sql(server, "select count() from cpu")
        except OSError:
            return 0  # the table does not exist yet (400)
        return int(doc["dataset"][0][0]) if doc.get("dataset") else 0

    def fix_query_file(self, path):
        data = Path(path).read_bytes()
        if GROUPBY_FROM in data:
            Path(path).write_bytes(data.replace(GROUPBY_FROM, GROUPBY_TO))

    def query_argv(self, server, path, workers):
        return [self.runner, f"--file={path}", f"--urls={server.url}/", f"--workers={workers}"]
