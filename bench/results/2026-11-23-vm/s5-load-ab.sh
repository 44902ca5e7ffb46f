#!/bin/bash
# Loads TSBS scenario 5's data (10 M hosts x 10 s, cpu-only, seed 123) into a fresh `sundial serve` and
# prints the loader's wall time and the server's CPU seconds over the load (utime + stime from /proc).
# No settle, no queries: the write path, flush and compaction of a load of new series, for before/after
# figures of one change (run the two binaries one after the other on a quiet machine, or under farm-bench).
#
#   bash bench/results/2026-11-23-vm/s5-load-ab.sh BIN [DATA] [DIR]
#
# DATA defaults to the file `bench/compare` caches for scenario 5; DIR (scratch, deleted first) to
# /tmp/s5-load-ab. Needs TSBS's tsbs_load_influx (installed by bench/compare or bench/tsbs).
set -euo pipefail
BIN=$1
CACHE=${SUNDIAL_CACHE:-$HOME/.cache/sundial}
DATA=${2:-$CACHE/tsbs/data/cpu-only-s10000000-2016-01-01T000000Z-2016-01-01T000010Z-seed123.influx.lp}
DIR=${3:-/tmp/s5-load-ab}
PORT=18086
rm -rf "$DIR"; mkdir -p "$DIR"
"$BIN" serve --data-dir "$DIR/data" --http-addr 127.0.0.1:$PORT --pg-addr 127.0.0.1:0 --flush-idle-secs 10 > "$DIR/server.log" 2>&1 &
SP=$!
trap 'kill $SP 2>/dev/null || true; wait $SP 2>/dev/null || true; rm -rf "$DIR/data"' EXIT
for _ in $(seq 100); do curl -s -o /dev/null -w '%{http_code}' 127.0.0.1:$PORT/ping | grep -q 204 && break; sleep 0.1; done
curl -s -XPOST 127.0.0.1:$PORT/query --data-urlencode 'q=CREATE DATABASE benchmark' > /dev/null
cpu() { awk '{print $14 + $15}' /proc/$SP/stat; }
C0=$(cpu); T0=$(date +%s.%N)
"$CACHE/tsbs/bin/tsbs_load_influx" --urls=http://127.0.0.1:$PORT --db-name=benchmark --workers=2 --batch-size=10000 \
    --gzip=false --do-create-db=false --file "$DATA" > "$DIR/load.log" 2>&1
T1=$(date +%s.%N); C1=$(cpu)
TICK=$(getconf CLK_TCK)
echo "binary $BIN"
grep "rows in" "$DIR/load.log"
echo "load wall s: $(echo "$T1 - $T0" | bc)  server CPU s: $(echo "scale=1; ($C1 - $C0) / $TICK" | bc)"
