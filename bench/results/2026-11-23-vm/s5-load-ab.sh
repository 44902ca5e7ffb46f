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
. "$(dirname "$0")/serve.sh"
DATA=${2:-$CACHE/tsbs/data/cpu-only-s10000000-2016-01-01T000000Z-2016-01-01T000010Z-seed123.influx.lp}
DIR=${3:-/tmp/s5-load-ab}
PORT=18086
rm -rf "$DIR"; mkdir -p "$DIR"
trap 'stop_sundial; rm -rf "$DIR/data"' EXIT
start_sundial "$BIN" "$DIR/data" $PORT "$DIR/server.log"
create_benchmark_db $PORT
cpu() { awk '{print $14 + $15}' /proc/$SP/stat; }
C0=$(cpu); T0=$(date +%s.%N)
load_influx $PORT "$DIR/load.log" "$DATA"
T1=$(date +%s.%N); C1=$(cpu)
TICK=$(getconf CLK_TCK)
echo "binary $BIN"
grep "rows in" "$DIR/load.log"
echo "load wall s: $(echo "$T1 - $T0" | bc)  server CPU s: $(echo "scale=1; ($C1 - $C0) / $TICK" | bc)"
