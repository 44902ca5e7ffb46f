#!/bin/bash
# Generates TSBS cpu-only data (seed 123, 10 s interval) for SCALE hosts from START to END, pipes it into a
# fresh `sundial serve`, waits 60 s for compaction to settle, counts the rows, stops the server cleanly and
# keeps DIR/data (for query-ab.sh and keepalive-ab.sh).
#
#   bash bench/results/2026-11-23-vm/load-keep.sh BIN SCALE START END DIR
set -u
BIN=$1 SCALE=$2 START=$3 END=$4 OUT=$5 PORT=18096
. "$(dirname "$0")/serve.sh"
rm -rf "$OUT"; mkdir -p "$OUT"
start_sundial "$BIN" "$OUT/data" $PORT "$OUT/server.log"
create_benchmark_db $PORT
"$TSBS_BIN/tsbs_generate_data" --use-case=cpu-only --seed=123 --scale="$SCALE" --timestamp-start="$START" \
  --timestamp-end="$END" --log-interval=10s --format=influx 2>/dev/null | load_influx $PORT "$OUT/load.log"
tail -3 "$OUT/load.log"
sleep 60
/usr/bin/time -f "count %e s" curl -s -XPOST "127.0.0.1:$PORT/query?db=benchmark" --data-urlencode 'q=SELECT count(usage_user) FROM cpu'; echo
stop_sundial
du -sh "$OUT/data"; ls "$OUT"/data/*/* | head
