"""PostgreSQL 15 from Debian's packages, plain tables (TimescaleDB is not installable here), driven by TSBS's
timescaledb tools with `--use-hypertable=false`. Recipe: /work/shared/PEERS.md and peers.sh (`start_pg`).

The server runs as the `postgres` user (PostgreSQL refuses root) in the foreground (no pg_ctl daemon), so it is
our child and dies with the harness; its data directory lives under /var/tmp because `postgres` cannot enter
/root. TSBS's queries call TimescaleDB's `time_bucket()`: a SQL shim on PostgreSQL's `date_bin` (origin
2000-01-03, TimescaleDB's) is created in template1, so the loader's fresh database inherits it.
"""

import os
import pwd
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path

from peers_common import DB, Peer, PeerInstallError, Server, failure_text, run
from procutil import free_port

PG_BIN = Path("/usr/lib/postgresql/15/bin")
SETTINGS = {"shared_buffers": "1GB", "max_wal_size": "4GB", "checkpoint_timeout": "15min",
            "effective_cache_size": "8GB", "maintenance_work_mem": "512MB", "work_mem": "64MB"}
TIME_BUCKET = ("CREATE OR REPLACE FUNCTION time_bucket(bucket_width interval, ts timestamptz) RETURNS timestamptz "
               "LANGUAGE sql IMMUTABLE PARALLEL SAFE AS "
               "$$ SELECT date_bin(bucket_width, ts, TIMESTAMPTZ '2000-01-03 00:00:00+00') $$;")


class PostgresPeer(Peer):
    name = "postgres"
    title = "PostgreSQL 15 (plain tables)"
    tsbs_format = "timescaledb"
    loader = "tsbs_load_timescaledb"
    runner = "tsbs_run_queries_timescaledb"
    tree = True
    notes = ["Plain PostgreSQL tables loaded by tsbs_load_timescaledb --use-hypertable=false (TimescaleDB is "
             "not available from this machine's registries): a row store with B-tree indexes, not TimescaleDB.",
             "time_bucket() is a SQL shim on date_bin().",
             "CPU: the whole process tree (postmaster, backends, background workers); memory: sum of PSS."]

    def install(self, log):
        if not (PG_BIN / "postgres").is_file():
            try:
                env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
                run(["apt-get", "update", "-qq"], log, env=env)
                run(["apt-get", "install", "-y", "-qq", "postgresql-15"], log, env=env)
            except Exception as e:  # noqa: BLE001
                raise PeerInstallError(failure_text(e)) from e
        if shutil.which("psql") is None:
            raise PeerInstallError("psql not found (apt-get install postgresql-client-15)")
        return subprocess.run([PG_BIN / "postgres", "--version"], capture_output=True, text=True).stdout.strip()

    def settings(self):
        return {"postgresql.conf": ", ".join(f"{k}={v}" for k, v in SETTINGS.items())
                + "; synchronous_commit=on (default: durable commits, like Sundial's fsync before 204)",
                "loader": "tsbs_load_timescaledb --use-hypertable=false (COPY, tags in a separate table, "
                          "indexes on (tags_id, time) and time as TSBS creates them)",
                "recommended": "PostgreSQL docs: shared_buffers ≈ 25 % of RAM (1 GB here: the machine is shared), "
                               "larger max_wal_size for bulk loads"}

    def make_server(self, root):
        # `postgres` cannot enter /root: the cluster lives in /var/tmp, `root` keeps only a pointer for cleanup.
        pg = pwd.getpwnam("postgres")
        base = Path(tempfile.mkdtemp(prefix="sundial-compare-pg-", dir="/var/tmp"))
        os.chown(base, pg.pw_uid, pg.pw_gid)
        Path(root).mkdir(parents=True, exist_ok=True)
        (Path(root) / "pg-dir").write_text(str(base))
        data = base / "data"
        p = subprocess.run(["runuser", "-u", "postgres", "--", PG_BIN / "initdb", "-D", data, "-U", "postgres",
                            "--auth=trust", "-E", "UTF8"], capture_output=True, text=True)
        if p.returncode != 0:
            raise RuntimeError(f"initdb failed: {p.stderr[-2000:]}")
        self.port = free_port()
        argv = [PG_BIN / "postgres", "-D", data, "-p", self.port, "-k", base, "-c", "listen_addresses=127.0.0.1"]
        for k, v in SETTINGS.items():
            argv += ["-c", f"{k}={v}"]
        s = Server("postgres", argv, base / "postgres.log", lambda: self._psql("postgres", "SELECT 1") == "1",
                   [data], url=f"postgresql://postgres@127.0.0.1:{self.port}", user="postgres",
                   stop_signal=signal.SIGINT)  # SIGINT = fast shutdown (SIGTERM waits for clients)
        s.cleanup_dirs = [base]
        return s

    def _psql(self, db, q):
        p = subprocess.run(["psql", "-X", "-q", "-A", "-t", "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres",
                            "-d", db, "-v", "ON_ERROR_STOP=1", "-c", q], capture_output=True, text=True, timeout=600)
        if p.returncode != 0:
            raise RuntimeError(p.stderr.strip())
        return p.stdout.strip()

    def prepare(self, server, log):
        self._psql("template1", TIME_BUCKET)

    def load_argv(self, server, workers, batch):
        return [self.loader, "--host=127.0.0.1", f"--port={self.port}", "--user=postgres", "--pass=",
                "--postgres=sslmode=disable", f"--db-name={DB}", "--use-hypertable=false",
                f"--workers={workers}", f"--batch-size={batch}"]

    def count(self, server):
        try:
            return int(self._psql(DB, "SELECT count(*) FROM cpu") or 0)
        except RuntimeError:
            return 0  # database or table not created yet

    def settle(self, server, log):
        self._psql(DB, "VACUUM ANALYZE")  # what autovacuum would do after a bulk load; also sets hint bits

    def query_argv(self, server, path, workers):
        return [self.runner, f"--file={path}", "--hosts=127.0.0.1", f"--port={self.port}", "--user=postgres",
                "--pass=", "--postgres=sslmode=disable", f"--db-name={DB}", f"--workers={workers}"]
