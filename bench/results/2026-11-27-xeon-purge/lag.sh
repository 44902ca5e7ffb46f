#!/bin/bash
# lag.sh BIN FILE: load, then time each count query until it sees every row
BIN=$1; F=$2; shift 2
# The server as load-ab.sh starts it (same flags), through the helpers of 2026-11-23-vm.
. "$(dirname "$0")/../2026-11-23-vm/serve.sh"
PORT=18766
start_load_test "$BIN" $PORT "$@" || exit 1
T0=$(date +%s.%N)
"$TSBS_BIN/tsbs_load_influx" --urls=http://127.0.0.1:$PORT --db-name=benchmark --workers=2 --batch-size=10000 --gzip=false --do-create-db=false --reporting-period=0s --file=$F 2>&1 | grep -E "rows in"
T1=$(date +%s.%N)
if [ -n "$PERF" ]; then perf record -F 999 --call-graph dwarf,16384 -o ${TMPDIR:-/tmp}/perf-count.data -p $SP > /dev/null 2>&1 & PP=$!; sleep 0.3; fi
ROWS=$(wc -l < $F)
while :; do
  a=$(date +%s.%N)
  n=$(row_count $PORT)
  b=$(date +%s.%N)
  echo "count $n took $(echo "$b - $a" | bc | cut -c1-5) s at $(echo "$b - $T1" | bc | cut -c1-5) s after the loader"
  [ "$n" = "$ROWS" ] && break; sleep 0.05
done
[ -n "$PERF" ] && { kill -INT $PP; wait $PP; }
grep -iE "flush|froze|compact" ${TMPDIR:-/tmp}/load-server.log | tail -5
stop_sundial
