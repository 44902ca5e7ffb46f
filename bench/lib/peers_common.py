"""What `bench/compare` needs from every database it runs: the `Peer` interface, a server process with any
readiness check, CPU/memory sampling of a whole process tree, and the two InfluxDB-API targets (Sundial and
InfluxDB 1.x, driven by TSBS's influx tools).

One module per other peer: peers_questdb.py, peers_victoriametrics.py, peers_postgres.py, peers_clickhouse.py.
Stdlib only.
"""

import ctypes
import hashlib
import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import httpapi
import peers_influxdb
import procutil
import sundial_server
from procutil import CLK_TCK, cmd_str

DB = "benchmark"
STEP_TIMEOUT_S = 3600  # limit of one install/build command (bench/compare sets it from --step-timeout)


class PeerInstallError(RuntimeError):
    """The peer could not be installed on this machine (the message says why); it is reported, not skipped."""


def run(argv, log=print, **kw):
    """subprocess.run with the command logged; raises CalledProcessError with its output on failure."""
    log(f"  $ {cmd_str(argv)}")
    kw.setdefault("timeout", STEP_TIMEOUT_S)
    p = subprocess.run([str(a) for a in argv], capture_output=True, text=True, **kw)
    if p.returncode != 0:
        raise subprocess.CalledProcessError(p.returncode, p.args, p.stdout, p.stderr)
    return p


def failure_text(e: BaseException) -> str:
    if isinstance(e, subprocess.CalledProcessError):
        out = ((e.stderr or "") + (e.stdout or "")).strip().splitlines()
        return f"`{cmd_str(e.cmd)}` exited with {e.returncode}: " + " | ".join(out[-6:])
    return f"{type(e).__name__}: {e}"


# ---------------------------------------------------------------- processes

def _pdeathsig_as(uid=None, gid=None):
    """preexec_fn: optionally drop to uid/gid, then ask for SIGTERM when the parent dies. The order matters:
    the kernel clears the parent-death signal when credentials change, so it is set after setuid."""
    def fn():
        if gid is not None:
            os.setgroups([])
            os.setgid(gid)
        if uid is not None:
            os.setuid(uid)
        try:
            ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
        except OSError:
            pass
    return fn


class Server(procutil.ServerProcess):
    """A server child whose readiness is `ready()` (any check: HTTP 200, a SQL answer), optionally run as another
    user. Like procutil.ServerProcess (whose stop() it uses) it dies with the harness."""

    def __init__(self, name, argv, log_path, ready, data_dirs, url=None, env=None, cwd=None, user=None,
                 stop_signal=signal.SIGTERM):
        super().__init__(argv, log_path, ping_url=None, env=env, cwd=cwd)
        self.name, self.ready, self.data_dirs, self.url = name, ready, [Path(d) for d in data_dirs], url
        self.user, self.stop_signal = user, stop_signal

    def start(self, timeout_s: float = 120.0):
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = open(self.log_path, "ab")
        uid = gid = None
        if self.user:
            import pwd
            pw = pwd.getpwnam(self.user)
            uid, gid = pw.pw_uid, pw.pw_gid
        self.proc = subprocess.Popen(self.argv, stdout=self._log, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, env=self.env, cwd=self.cwd,
                                     preexec_fn=_pdeathsig_as(uid, gid))
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.name} exited with {self.proc.returncode} at start-up: "
                                   f"{cmd_str(self.argv)}\n--- {self.log_path} ---\n{self.log_tail()}")
            try:
                if self.ready():
                    return self
            except Exception:  # noqa: BLE001 - not ready yet, whatever the client says
                pass
            time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"{self.name} was not ready within {timeout_s:.0f} s\n--- {self.log_path} ---\n"
                           f"{self.log_tail()}")


def http_ok(url: str, timeout: float = 2.0) -> bool:
    return procutil.http_status(url, timeout) == 200


# ---------------------------------------------------------------- /proc sampling of a process tree

def _stat(pid):
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()


def _children_map():
    kids = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                ppid = int(_stat(d)[1])
            except (OSError, IndexError, ValueError):
                continue
            kids.setdefault(ppid, []).append(int(d))
    return kids


def tree_pids(root: int) -> list:
    kids, out, todo = _children_map(), [], [root]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(kids.get(p, []))
    return out


def _pss_bytes(pid) -> int:
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


class TreeSampler:
    """CPU seconds and memory of a server every `interval_s`, with the time series kept for the charts.

    Single-process servers: utime+stime and VmRSS of that process (as procutil.ProcSampler). Multi-process
    servers (`tree=True`, PostgreSQL): utime+stime of every live process of the tree plus the root's
    cutime+cstime (the CPU of the children it has already reaped), and the sum of PSS (proportional set
    size: shared buffers counted once, not once per backend)."""

    def __init__(self, pid: int, tree: bool = False, interval_s: float = 0.5):
        self.pid, self.tree, self.interval_s = pid, tree, interval_s
        self.series = []  # (seconds since start, cumulative CPU seconds since start, memory bytes)
        self.peak_mem = 0
        self.io0, self.io_last = {}, {}  # pid -> write_bytes (/proc/PID/io) at the start, and last seen
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _cpu(self) -> float:
        if not self.tree:
            return procutil.proc_cpu_s(self.pid)
        total = 0
        for p in tree_pids(self.pid):
            try:
                f = _stat(p)
            except OSError:
                continue
            total += int(f[11]) + int(f[12]) + (int(f[13]) + int(f[14]) if p == self.pid else 0)
        return total / CLK_TCK

    def _mem(self) -> int:
        if not self.tree:
            return procutil.proc_mem_bytes(self.pid)["rss_bytes"]
        return sum(_pss_bytes(p) for p in tree_pids(self.pid))

    def _io(self) -> dict:
        """write_bytes of every process: bytes it caused to be written to storage."""
        out = {}
        for p in (tree_pids(self.pid) if self.tree else [self.pid]):
            try:
                with open(f"/proc/{p}/io") as f:
                    for line in f:
                        if line.startswith("write_bytes:"):
                            out[p] = int(line.split()[1])
            except OSError:
                pass
        return out

    def start(self):
        self.t0 = time.monotonic()
        self.cpu0 = self._cpu()
        self.io0 = self._io()
        self._thread.start()
        return self

    def _sample(self):
        try:
            cpu, mem = self._cpu() - self.cpu0, self._mem()
        except (OSError, ProcessLookupError):
            return
        self.peak_mem = max(self.peak_mem, mem)
        self.io_last.update(self._io())  # backends that exit keep their last figure
        self.series.append((round(time.monotonic() - self.t0, 2), round(cpu, 2), mem))

    def _run(self):
        self._sample()
        while not self._stop.wait(self.interval_s):
            self._sample()

    def stop(self) -> dict:
        self._stop.set()
        self._thread.join()
        self._sample()
        wall = time.monotonic() - self.t0
        cpu = self.series[-1][1] if self.series else None
        return {"server_cpu_s": cpu, "server_cpu_util": round(cpu / wall, 3) if cpu is not None and wall else None,
                "server_peak_mem_bytes": self.peak_mem,
                "server_mem_measure": "sum of PSS over the process tree" if self.tree else "VmRSS",
                "server_disk_write_bytes": sum(v - self.io0.get(p, 0) for p, v in self.io_last.items()),
                "timeline": self.series}


# ---------------------------------------------------------------- the interface

class Peer:
    """One database under test. Subclasses fill in the class attributes and the methods."""

    name = ""                 # command-line key
    title = ""                # shown in the report
    tsbs_format = ""          # tsbs_generate_data / tsbs_generate_queries --format
    loader = ""               # TSBS loader tool
    runner = ""               # TSBS query runner tool
    tree = False              # multi-process server: sample the whole process tree
    answers_comparable = True # False: its query language answers a different question (PromQL windows)
    notes = []                # what is not comparable, shown in the report
    data_range = (0, 0)       # [start, end) of the data set, epoch seconds (set by bench/compare)
    settled_disk = "after_settle"  # which disk figure is the settled size ("after_stop": preallocating peers)

    def install(self, log) -> str:
        """Install if missing (raise PeerInstallError with the reason); return the version."""
        raise NotImplementedError

    def settings(self) -> dict:
        """Settings used, and what the peer's docs recommend, for the report."""
        return {}

    def make_server(self, root: Path) -> Server:
        raise NotImplementedError

    def prepare(self, server, log):
        """After start, before the loader (create the database when the loader does not)."""

    def load_argv(self, server, workers: int, batch: int) -> list:
        raise NotImplementedError

    def count(self, server) -> int:
        """Rows of `cpu` a query sees now."""
        raise NotImplementedError

    def fix_query_file(self, path):
        """Rewrite a freshly generated query file if this TSBS revision's queries need it (see QuestDB)."""

    def query_argv(self, server, path, workers: int) -> list:
        raise NotImplementedError

    def responses_stream(self) -> str:
        """Where the runner prints --print-responses: 'stdout' or 'stderr'."""
        return "stdout"

    def settle(self, server, log):
        """Nudge the peer to its settled state before the after-settle disk figure (most need nothing)."""


# ---------------------------------------------------------------- InfluxDB API targets

# See bench/tsbs: InfluxDB's idle timers shortened so the settled figure is its compacted TSM size. Then what
# TDengine's report set for InfluxDB (after InfluxDB's own advice for high cardinality): the TSI index and no
# series/tag-value limits (defaults 1 M series and 100 K values per tag: scenarios 4 and 5 would be refused),
# and a larger cache (TDengine: 80g of 244 GiB; here 8g of 24 GiB), else 10 M series fill the default 1 GiB.
INFLUXDB_OVERRIDES = [("data", "cache-snapshot-write-cold-duration", '"10s"'),
                      ("data", "compact-full-write-cold-duration", '"20s"'),
                      ("data", "index-version", '"tsi1"'),
                      ("data", "max-series-per-database", "0"),
                      ("data", "max-values-per-tag", "0"),
                      ("data", "cache-max-memory-size", '"8g"')]


class _InfluxApi(Peer):
    tsbs_format = "influx"
    loader = "tsbs_load_influx"
    runner = "tsbs_run_queries_influx"

    def prepare(self, server, log):
        httpapi.create_database(server.url, DB)

    def load_argv(self, server, workers, batch):
        return [self.loader, f"--urls={server.url}", f"--db-name={DB}", f"--workers={workers}",
                f"--batch-size={batch}", "--gzip=false", "--do-create-db=false"]

    def count(self, server):
        return httpapi.count_rows(server.url, DB)

    def query_argv(self, server, path, workers):
        return [self.runner, f"--file={path}", f"--urls={server.url}", f"--db-name={DB}", f"--workers={workers}"]


# SundialPeer.settle: consecutive idle readings of /debug/vars (0.5 s apart) that count as settled, and how long
# it waits at most (then goes on, saying so; the step timeout still bounds the whole pair).
SUNDIAL_SETTLE_IDLE_POLLS = 3
SUNDIAL_SETTLE_TIMEOUT_S = 900
# /debug/vars' compaction figures that must all be 0: merging, merge due, merge due once write-cold.
COMPACTION_BUSY = ("running", "pending", "write_cold_later")


class SundialPeer(_InfluxApi):
    name = "sundial"
    title = "Sundial"
    notes = []

    def __init__(self, binary=None):
        self.binary = binary

    def install(self, log):
        if self.binary is None:
            self.binary = sundial_server.find_binary(build=False, log=log, allow_debug=True)
        try:
            p = subprocess.run([self.binary, "--version"], capture_output=True, text=True, timeout=10)
            version = p.stdout.strip() or "unknown"
        except (OSError, subprocess.TimeoutExpired):
            version = "unknown"
        profile = "debug build (timings meaningless)" if "/debug/" in str(self.binary) else "release build"
        return f"{version} ({profile}: {self.binary})"

    def identity(self) -> dict:
        """Which binary ran: path, size, mtime and SHA-256 (a shared target dir can be rebuilt during a run)."""
        st = os.stat(self.binary)
        h = hashlib.sha256()
        with open(self.binary, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
        return {"path": str(self.binary), "size": st.st_size,
                "mtime": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(st.st_mtime)), "sha256": h.hexdigest()}

    def settings(self):
        return {"flags": "--flush-idle-secs 10 (memtable flushed 10 s after writes stop, as bench/tsbs), "
                          "--compact-full-write-cold-secs 20 (the newest partition merged into one file 20 s after "
                          "its last file: InfluxDB's cache-snapshot and compact-full write-cold durations here)",
                "wal-sync": "batch (default: fsync before acknowledging)",
                "memtable": "default --memtable-mib: an eighth of the memory, 64 to 1,024 MiB (GreptimeDB's "
                            "write-buffer default)",
                "recommended": "defaults"}

    def settle(self, server, log):
        """Waits until the memtables are flushed (10 s after the load, `--flush-idle-secs`) and compaction is
        neither running nor due, nor waiting for the newest partition to turn write-cold, by /debug/vars, so
        that the settled disk figure and the queries after it see the compacted files, not a merge in progress
        (which once made 1-worker latencies 70x the settled ones in scenario 2). The fixed settle time still
        applies on top, as for every database."""
        t0 = time.monotonic()
        idle_polls, last = 0, None
        while idle_polls < SUNDIAL_SETTLE_IDLE_POLLS:
            if time.monotonic() - t0 > SUNDIAL_SETTLE_TIMEOUT_S:
                log(f"  sundial: still busy after {SUNDIAL_SETTLE_TIMEOUT_S} s of settling ({last}); going on")
                return
            time.sleep(0.5)
            try:
                r = httpapi.request("GET", server.url, "/debug/vars", timeout=60)
            except OSError as e:
                r = e
            if not isinstance(r, httpapi.Response) or r.status != 200:
                log(f"  sundial: /debug/vars: {r}")
                idle_polls = 0
                continue
            try:
                v = r.json()["sundial"]
                v["compaction"]["running"]  # noqa: B018 - a binary without the figure fails here, once
            except (TypeError, KeyError) as e:
                log(f"  sundial: /debug/vars has no compaction figures ({e!r}: {r}); settling by time only")
                return
            last = {"memtable_rows": v["memtable_rows"], **v["compaction"]}
            idle = v["memtable_rows"] == 0 and not any(v["compaction"].get(k) for k in COMPACTION_BUSY)
            idle_polls = idle_polls + 1 if idle else 0
        log(f"  sundial: memtables flushed and compaction idle {time.monotonic() - t0:.1f} s after the load")

    def make_server(self, root):
        s = sundial_server.Sundial(root, self.binary)
        return Server("sundial", s.argv, s.log_path, lambda: procutil.http_status(s.url + "/ping") == 204,
                      s.data_dirs, url=s.url)


class InfluxDBPeer(_InfluxApi):
    name = "influxdb"
    title = "InfluxDB 1.x"

    def install(self, log):
        try:
            return peers_influxdb.ensure_installed(log)
        except (subprocess.CalledProcessError, OSError) as e:
            raise PeerInstallError(failure_text(e)) from e

    def settings(self):
        return {"config": "`influxd config` defaults, ports/dirs moved, _internal monitor and HTTP/query logs off; "
                          + ", ".join(f"[{s}] {k} = {v}" for s, k, v in INFLUXDB_OVERRIDES),
                "recommended": "InfluxDB docs: tsi1 for high series cardinality; TDengine's report used tsi1, "
                               "max-values-per-tag = 0 and a large cache"}

    def make_server(self, root):
        s = peers_influxdb.InfluxDB(root, INFLUXDB_OVERRIDES)
        return Server("influxdb", s.argv, s.log_path, lambda: procutil.http_status(s.url + "/ping") == 204,
                      s.data_dirs, url=s.url)
