#!/bin/bash
# query-types-ab.sh DATA_DIR QUERY_DIR TYPES REPS BIN...: per binary (each on a fresh copy of DATA_DIR, a
# settled `sundial serve` data directory loaded with TSBS cpu-only), the mean wall ms and the server's CPU
# ms (utime + stime from /proc) per query of each TSBS query type in TYPES (comma-separated; the files
# QUERY_DIR/TYPE.gob from tsbs_generate_queries --format=influx), every query of a file REPS times over one
# keep-alive connection, after 5 warm-up ones. Alternate binaries to see the spread: CPU per query moves
# far less than wall time on this shared machine.
#
# The files used here: 50 queries per type at 4,000 hosts over the data's 12 hours, as bench/compare makes them:
#   tsbs_generate_queries --use-case=cpu-only --seed=123 --scale=4000 --timestamp-start=2016-01-01T00:00:00Z \
#     --timestamp-end=2016-01-01T12:00:01Z --queries=50 --query-type=TYPE --format=influx --file=QUERY_DIR/TYPE.gob
set -u
DATA=$1 QDIR=$2 TYPES=$3 REPS=$4; shift 4
HERE=$(dirname "$0")
. "$HERE/../2026-11-23-vm/serve.sh"
PORT=18141 W=/tmp/query-types-ab
for BIN in "$@"; do
  rm -rf $W; mkdir -p $W; cp -r "$DATA" $W/data
  start_sundial "$BIN" $W/data $PORT $W/server.log; sleep 1
  echo "== $(basename "$BIN")"
  python3 - "$PORT" "$SP" "$QDIR" "$REPS" "$TYPES" "$TSBS_BIN/tsbs_dump_queries" <<'P'
import http.client, json, os, subprocess, sys, time, urllib.parse
port, pid, qdir, reps, types, dump = int(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5].split(','), sys.argv[6]
c = http.client.HTTPConnection('127.0.0.1', port)
def one(q):
    c.request('POST', '/query?db=benchmark', urllib.parse.urlencode({'q': q, 'db': 'benchmark'}), {'Content-Type': 'application/x-www-form-urlencoded'})
    r = c.getresponse(); r.read()
    if r.status != 200: sys.exit(f'{q}: HTTP {r.status}')
def cpu():
    f = open(f'/proc/{pid}/stat').read().rsplit(')', 1)[1].split()
    return (int(f[11]) + int(f[12])) * 1000 / os.sysconf('SC_CLK_TCK')
for t in types:
    with open(os.path.join(qdir, t + '.gob')) as f:
        qs = [json.loads(l)['influxql'] for l in subprocess.run([dump], stdin=f, capture_output=True, text=True, check=True).stdout.splitlines()]
    for q in qs[:5]: one(q)
    c0, t0 = cpu(), time.perf_counter()
    for _ in range(reps):
        for q in qs: one(q)
    n = reps * len(qs)
    print(f"{t:24s} wall {(time.perf_counter() - t0) / n * 1e3:8.2f} ms  cpu {(cpu() - c0) / n:8.2f} ms/q", flush=True)
P
  stop_sundial
done
rm -rf $W
