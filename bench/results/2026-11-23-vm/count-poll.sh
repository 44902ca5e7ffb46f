#!/bin/bash
# Loads a TSBS data file into a fresh `sundial serve` and polls `SELECT count(usage_user) FROM cpu` until it
# sees every row, as `bench/compare` does to call rows committed; prints each poll's time, the loader's
# wall time and the committed rows/s. For before/after figures of the read path right after a load.
#
#   bash bench/results/2026-11-23-vm/count-poll.sh BIN DATA ROWS [DIR]
#
# DATA: a cached influx-format file (e.g. scenario 4's cpu-only-s1000000-…-000030Z-seed123.influx.lp,
# 3000000 rows); DIR (scratch, deleted first) defaults to /tmp/count-poll.
set -euo pipefail
BIN=$1 DATA=$2 ROWS=$3 DIR=${4:-/tmp/count-poll} PORT=18098
. "$(dirname "$0")/serve.sh"
rm -rf "$DIR"; mkdir -p "$DIR"
trap 'stop_sundial; rm -rf "$DIR/data"' EXIT
start_sundial "$BIN" "$DIR/data" $PORT "$DIR/server.log"
create_benchmark_db $PORT
T0=$(date +%s.%N)
load_influx $PORT "$DIR/load.log" "$DATA"
T1=$(date +%s.%N)
while true; do
    s=$(date +%s.%N)
    c=$(curl -s -XPOST "127.0.0.1:$PORT/query?db=benchmark" --data-urlencode 'q=SELECT count(usage_user) FROM cpu' \
        | grep -o '"values":\[\[[^]]*\]' | grep -o '[0-9]*\]$' | tr -d ']' || true)
    echo "poll $(echo "$(date +%s.%N) - $s" | bc) s -> ${c:-0} rows"
    [ "${c:-0}" = "$ROWS" ] && break
done
T2=$(date +%s.%N)
echo "binary $BIN: load $(echo "$T1 - $T0" | bc) s, committed $(echo "$T2 - $T0" | bc) s = $(echo "$ROWS / ($T2 - $T0)" | bc) rows/s"
