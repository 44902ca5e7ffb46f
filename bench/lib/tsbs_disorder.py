"""Out-of-order (O3) variants of a TSBS line-protocol file, and the answers used to check them.

TSBS writes rows in time order. Issue 5's O3 benchmark needs the same rows delivered late:
- `late10`: 10 % of the rows (seeded), each held back by a uniformly random 0-3600 s of *data* time:
  it is sent just before the first row whose timestamp is ≥ its own + the delay;
- `late-hours`: every 6th hour of data (hours 5, 11, 17, … after the start) is delivered 1 h late,
  interleaved with the next hour's rows, in order among themselves;
- `dup_percent`: that share of rows is sent a second time, unchanged, up to 1 h later (last write wins
  makes them invisible to queries).
The rewritten file holds the same distinct rows, so the count query and every answer must match the
in-order load's.
"""

import hashlib
import heapq
import json
import random
from pathlib import Path

import httpapi

DISORDERS = ["none", "late10", "late-hours"]
LATE_SHARE = 0.10
LATE_MAX_NS = 3600 * 10**9
HOUR_NS = 3600 * 10**9
LATE_HOUR_EVERY = 6


def disordered_path(src: Path, disorder: str, dup_percent: float, seed: int) -> Path:
    dup = f"-dup{dup_percent:g}" if dup_percent else ""
    return src.with_name(src.name.replace(".influx.lp", f".{disorder}{dup}-seed{seed}.influx.lp"))


def write_disordered(src: Path, dst: Path, disorder: str, dup_percent: float, seed: int) -> dict:
    """Rewrite `src` (time-ordered line protocol) into `dst`; returns counts of what was moved."""
    rng = random.Random(seed)
    held = []  # (release_ts, seq, line): a heap, released before the first row at or after release_ts
    seq = start = 0
    stats = {"rows": 0, "late": 0, "duplicates": 0}
    tmp = dst.with_suffix(".tmp")
    with open(src, "rb") as f, open(tmp, "wb") as out:
        for line in f:
            ts = int(line.rsplit(b" ", 1)[1])
            if stats["rows"] == 0:
                start = ts
            stats["rows"] += 1
            while held and held[0][0] <= ts:
                out.write(heapq.heappop(held)[2])
            if disorder == "late10":
                late = rng.random() < LATE_SHARE
                release = ts + rng.randint(1, LATE_MAX_NS)
            elif disorder == "late-hours":
                late = (ts - start) // HOUR_NS % LATE_HOUR_EVERY == LATE_HOUR_EVERY - 1
                release = ts + HOUR_NS
            else:
                late = False
            if late:
                seq += 1
                heapq.heappush(held, (release, seq, line))
                stats["late"] += 1
            else:
                out.write(line)
            if dup_percent and rng.random() < dup_percent / 100:
                seq += 1
                heapq.heappush(held, (ts + rng.randint(1, LATE_MAX_NS), seq, line))
                stats["duplicates"] += 1
        while held:
            out.write(heapq.heappop(held)[2])
    tmp.rename(dst)
    return stats


# Whole-range and per-host-per-hour aggregates of several fields; answers must be identical.
ANSWER_QUERIES = [
    "SELECT count(usage_user), sum(usage_user), sum(usage_system), max(usage_idle), min(usage_nice), "
    "sum(usage_iowait), sum(usage_irq), sum(usage_softirq), sum(usage_steal), sum(usage_guest), "
    "sum(usage_guest_nice) FROM cpu WHERE time >= '{start}' AND time < '{end}'",
    "SELECT count(usage_user), sum(usage_user), mean(usage_system), max(usage_idle), min(usage_nice) "
    "FROM cpu WHERE time >= '{start}' AND time < '{end}' GROUP BY time(1h), hostname",
    "SELECT last(usage_user), first(usage_guest) FROM cpu GROUP BY hostname",
]


def answers(url: str, db: str, start: str, end: str) -> dict:
    """Each answer query's result (InfluxDB JSON) with its SHA-256, for comparing two loads."""
    out = []
    for q in ANSWER_QUERIES:
        q = q.format(start=start, end=end)
        r = httpapi.query(url, q, db=db, epoch="ns", timeout=600)
        body = r.json()
        canon = json.dumps(body, sort_keys=True, separators=(",", ":"))
        series = ((body or {}).get("results") or [{}])[0].get("series") or []
        out.append({"query": q, "status": r.status, "sha256": hashlib.sha256(canon.encode()).hexdigest(),
                    "series": len(series), "values": sum(len(s.get("values") or []) for s in series),
                    "body": body})
    return {"queries": out}
