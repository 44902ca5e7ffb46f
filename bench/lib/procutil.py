"""Process, port and file-system helpers shared by `bench/tsbs` and `tests/compat/`.

Stdlib only. Every server is started from the main thread with PR_SET_PDEATHSIG so that it dies with the
Python process even if our `finally` blocks never run (SIGKILL of the harness); `ServerProcess.stop()` is the
ordinary, graceful way out (SIGTERM, wait, then SIGKILL).
"""

import ctypes
import os
import shlex
import signal
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

CLK_TCK = os.sysconf("SC_CLK_TCK")
PAGE_BYTES = os.sysconf("SC_PAGE_SIZE")
_PR_SET_PDEATHSIG = 1


def cache_dir() -> Path:
    """`$SUNDIAL_CACHE`, default `~/.cache/sundial`: TSBS binaries, generated data, scratch data dirs."""
    return Path(os.environ.get("SUNDIAL_CACHE", Path.home() / ".cache" / "sundial"))


def cmd_str(argv) -> str:
    return shlex.join(str(a) for a in argv)


def _die_with_parent():
    # Runs in the child between fork and exec: ask the kernel to SIGTERM us when the parent thread dies.
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    except OSError:
        pass


def popen_child(argv, **kw) -> subprocess.Popen:
    """Popen that dies with us (PR_SET_PDEATHSIG). Call from the main thread only."""
    return subprocess.Popen([str(a) for a in argv], preexec_fn=_die_with_parent, **kw)


def wait_rusage(proc: subprocess.Popen):
    """Wait for a child and return (returncode, user_s, sys_s) from wait4() — that child's own CPU time."""
    _, status, ru = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return proc.returncode, ru.ru_utime, ru.ru_stime


def free_port() -> int:
    """A loopback TCP port that was free a moment ago (bind to 0, read it back, close)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_status(url: str, timeout: float = 2.0):
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code
    except (urllib.error.URLError, OSError):
        return None


def dir_bytes(path) -> dict:
    """Allocated (du-like, st_blocks*512) and apparent (sum of st_size) bytes of all files under `path`."""
    alloc = apparent = files = 0
    for root, _dirs, names in os.walk(path):
        for n in names:
            try:
                st = os.lstat(os.path.join(root, n))
            except FileNotFoundError:
                continue  # compaction removed it while we walked
            alloc += st.st_blocks * 512
            apparent += st.st_size
            files += 1
    return {"allocated_bytes": alloc, "apparent_bytes": apparent, "files": files}


def proc_cpu_s(pid: int) -> float:
    """utime + stime of a live process, seconds (/proc/PID/stat fields 14 and 15)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def proc_mem_bytes(pid: int) -> dict:
    """VmRSS and VmHWM (peak RSS since start) of a live process."""
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(("VmRSS:", "VmHWM:")):
                k, v = line.split(":", 1)
                out[k] = int(v.split()[0]) * 1024
    return {"rss_bytes": out.get("VmRSS", 0), "hwm_bytes": out.get("VmHWM", 0)}


class ProcSampler:
    """Samples a server's CPU time and RSS every `interval_s` on a thread, between start() and stop()."""

    def __init__(self, pid: int, interval_s: float = 0.25):
        self.pid, self.interval_s = pid, interval_s
        self.peak_rss_bytes = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self):
        self.cpu_start_s = proc_cpu_s(self.pid)
        self.t_start = time.monotonic()
        self._thread.start()
        return self

    def _sample(self):
        try:
            m = proc_mem_bytes(self.pid)
        except (FileNotFoundError, ProcessLookupError):
            return
        self.peak_rss_bytes = max(self.peak_rss_bytes, m["rss_bytes"])

    def _run(self):
        while not self._stop.wait(self.interval_s):
            self._sample()

    def stop(self) -> dict:
        self._stop.set()
        self._thread.join()
        self._sample()
        wall = time.monotonic() - self.t_start
        cpu = proc_cpu_s(self.pid) - self.cpu_start_s
        return {
            "server_cpu_s": round(cpu, 3),
            "server_cpu_util": round(cpu / wall, 3) if wall > 0 else None,  # 1.0 = one core busy
            "server_peak_rss_bytes": self.peak_rss_bytes,
            "server_vmhwm_bytes": proc_mem_bytes(self.pid)["hwm_bytes"],  # peak since the server started
        }


class ServerProcess:
    """A server child process with a log file; `ping_url` must answer 204 once it is ready."""

    name = "server"
    stop_signal = signal.SIGTERM  # what a clean stop sends first (PostgreSQL: SIGINT, its "fast" shutdown)

    def __init__(self, argv, log_path, ping_url, env=None, cwd=None):
        self.argv, self.log_path, self.ping_url = [str(a) for a in argv], Path(log_path), ping_url
        self.env, self.cwd = env, cwd
        self.proc = None

    @property
    def pid(self):
        return self.proc.pid

    def start(self, timeout_s: float = 60.0):
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = open(self.log_path, "ab")
        self.proc = popen_child(self.argv, stdout=self._log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                env=self.env, cwd=self.cwd)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.name} exited with {self.proc.returncode} at start-up: "
                                   f"{cmd_str(self.argv)}\n--- {self.log_path} ---\n{self.log_tail()}")
            if http_status(self.ping_url) == 204:
                return self
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"{self.name} did not answer 204 on {self.ping_url} within {timeout_s:.0f} s\n"
                           f"--- {self.log_path} ---\n{self.log_tail()}")

    def log_tail(self, n_bytes: int = 3000) -> str:
        try:
            return self.log_path.read_bytes()[-n_bytes:].decode(errors="replace")
        except OSError:
            return ""

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self, timeout_s: float = 30.0):
        """`stop_signal` (SIGTERM), wait up to `timeout_s`, then SIGKILL. Idempotent."""
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.send_signal(self.stop_signal)
            try:
                self.proc.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if not self._log.closed:
            self._log.close()
