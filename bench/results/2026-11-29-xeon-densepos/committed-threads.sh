#!/bin/bash
# committed-threads.sh BIN FILE [server flags...]: ../2026-11-28-epyc-hotquick/settled.sh up to the
# count that sees every row (committed), without waiting for the data to settle, printing also each
# kind of server thread's CPU seconds at that point (the write path runs on `tokio-rt-worker` threads,
# the memtable flush on `sundial-flush`, the WAL's fsyncs on `sundial-wal`). A write-path change shows
# in `tokio-rt-worker`, which the flush's share of the noise does not blur. PERF=1 PERFARGS="..." records
# the server with perf until committed.
BIN=$1; F=$2; shift 2
. "$(dirname "$0")/../2026-11-23-vm/serve.sh"
PORT=18766
start_load_test "$BIN" $PORT "$@" || exit 1
if [ -n "$PERF" ]; then perf record $PERFARGS -o ${TMPDIR:-/tmp}/perf-load.data -p $SP > /dev/null 2>&1 & PP=$!; fi
cpu() { awk '{printf "%.2f", ($14+$15)/100}' /proc/$SP/stat; }
T0=$(date +%s.%N)
"$TSBS_BIN/tsbs_load_influx" --urls=http://127.0.0.1:$PORT --db-name=benchmark --workers=2 --batch-size=10000 --gzip=false --do-create-db=false --reporting-period=0s --file=$F 2>&1 | grep -E "^loaded"
ROWS=$(wc -l < $F)
wait_for_rows $PORT $ROWS
T2=$(date +%s.%N)
[ -n "$PERF" ] && { kill -INT $PP; wait $PP; }
for t in /proc/$SP/task/*; do awk -v n="$(cat $t/comm)" "{print n, (\$14+\$15)/100}" $t/stat; done | awk "{a[\$1]+=\$2} END {for (k in a) printf \"%s=%.2f \", k, a[k]; print \"\"}"
echo "committed $(echo "$T2 - $T0" | bc) s = $(echo "$ROWS/($T2-$T0)" | bc) rows/s, server cpu $(cpu) s, $(grep VmHWM /proc/$SP/status | tr -s ' '), minor faults $(awk '{print $10}' /proc/$SP/stat)"
[ -n "$AFTER_SETTLED" ] && eval "$AFTER_SETTLED"
stop_sundial
