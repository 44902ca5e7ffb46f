#!/bin/bash
# committed.sh BIN FILE [server flags...]: load-ab.sh, then SELECT count(usage_user) polled until it sees every row;
# prints that time ("committed") and the server CPU then. PERF=1 PERFARGS="..." records the server with perf.
# "committed" counts from the loader's start, and includes the `wc -l` of FILE after the loader (about 0.5 s
# for scenario 5's file): the same for every build an A/B compares.
BIN=$1; F=$2; shift 2
# The server as load-ab.sh starts it (same flags), through the helpers of 2026-11-23-vm.
. "$(dirname "$0")/../2026-11-23-vm/serve.sh"
PORT=18766
start_load_test "$BIN" $PORT "$@" || exit 1
if [ -n "$PERF" ]; then perf record $PERFARGS -o ${TMPDIR:-/tmp}/perf-load.data -p $SP > /dev/null 2>&1 & PP=$!; fi
(while kill -0 $SP 2>/dev/null; do echo "$(date +%s) $(awk '{print $14+$15}' /proc/$SP/stat) $(grep VmRSS /proc/$SP/status | awk '{print $2}')"; sleep 1; done) > ${TMPDIR:-/tmp}/cpu-timeline.txt &
T0=$(date +%s.%N)
"$TSBS_BIN/tsbs_load_influx" --urls=http://127.0.0.1:$PORT --db-name=benchmark --workers=2 --batch-size=10000 --gzip=false --do-create-db=false --reporting-period=1s --file=$F 2>&1 | tail -n +1
T1=$(date +%s.%N)
ROWS=$(wc -l < $F)
wait_for_rows $PORT $ROWS
T2=$(date +%s.%N)
echo "committed $(echo "$T2 - $T0" | bc) s = $(echo "$ROWS/($T2-$T0)" | bc) rows/s"
read -r U S <<< $(awk '{print $14, $15}' /proc/$SP/stat)
echo "wall $(echo "$T1 - $T0" | bc) server cpu $(echo "($U+$S)/100" | bc -l | cut -c1-6)"
grep VmHWM /proc/$SP/status
[ -n "$PERF" ] && { kill -INT $PP; wait $PP; }
stop_sundial
