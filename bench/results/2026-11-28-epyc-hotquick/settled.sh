#!/bin/bash
# settled.sh BIN FILE [server flags...]: ../2026-11-27-xeon-level/committed.sh's load and count (time until
# `SELECT count(usage_user)` sees every row, and the server's CPU then), then waits until /debug/vars shows
# compaction idle (nothing running, due, or waiting for the partition to turn write-cold: 20 s after its
# last file, as bench/compare runs the server) and prints that time, the server's CPU then, and the data
# directory's size (memtables flushed too: 10 s after the last write, `--flush-idle-secs`, as bench/compare
# waits). PERF=1 PERFARGS="..." records the server with perf until committed. AFTER_SETTLED='shell text' runs
# that text (with $PORT set) once settled, before the server stops: ../2026-11-28-epyc-few/NOTES.md times
# the first queries after a load that way. Minor faults (pages first touched, or touched again after
# being given back) are a count the machine's speed does not move, where CPU seconds do by ±30 %.
# THREADS=1 adds each kind of server thread's CPU at the count; SETTLE=0 stops there (../2026-11-29-xeon-densepos).
# PERFTARGET='-a' records the whole machine instead of the server alone (a scheduler trace: the loader's
# threads and idle cores too, ../2026-11-30-xeon-unlocked).
BIN=$1; F=$2; shift 2
. "$(dirname "$0")/../2026-11-23-vm/serve.sh"
PORT=18766
start_load_test "$BIN" $PORT "$@" || exit 1
if [ -n "$PERF" ]; then perf record $PERFARGS -o ${TMPDIR:-/tmp}/perf-load.data ${PERFTARGET:--p $SP} > /dev/null 2>&1 & PP=$!; fi
cpu() { awk '{printf "%.2f", ($14+$15)/100}' /proc/$SP/stat; }
T0=$(date +%s.%N)
"$TSBS_BIN/tsbs_load_influx" --urls=http://127.0.0.1:$PORT --db-name=benchmark --workers=2 --batch-size=10000 --gzip=false --do-create-db=false --reporting-period=0s --file=$F 2>&1 | grep -E "^loaded"
ROWS=$(wc -l < $F)
wait_for_rows $PORT $ROWS
T2=$(date +%s.%N)
[ -n "$PERF" ] && { kill -INT $PP; wait $PP; }
# THREADS=1: each kind of server thread's CPU seconds at this point (bench/results/2026-11-29-xeon-densepos).
if [ -n "$THREADS" ]; then
  for t in /proc/$SP/task/*; do awk -v n="$(cat $t/comm)" '{print n, ($14+$15)/100}' $t/stat; done |
    awk '{a[$1]+=$2} END {for (k in a) printf "%s=%.2f ", k, a[k]; print ""}'
fi
echo "committed $(echo "$T2 - $T0" | bc) s = $(echo "$ROWS/($T2-$T0)" | bc) rows/s, server cpu $(cpu) s, $(grep VmHWM /proc/$SP/status | tr -s ' '), minor faults $(awk '{print $10}' /proc/$SP/stat)"
idle=0
# SETTLE=0: stop at the count, without waiting for the data to settle.
[ "${SETTLE:-1}" = 0 ] && idle=3
while [ $idle -lt 3 ]; do
  sleep 0.5
  c=$(curl -s 127.0.0.1:$PORT/debug/vars | python3 -c 'import json,sys; v=json.load(sys.stdin)["sundial"]; c=v["compaction"]; print(v["memtable_rows"]+c["running"]+c["pending"]+c["write_cold_later"])')
  [ "$c" = 0 ] && idle=$((idle+1)) || idle=0
done
T3=$(date +%s.%N)
[ "${SETTLE:-1}" = 0 ] || echo "settled $(echo "$T3 - $T0" | bc) s, server cpu $(cpu) s, data $(du -sm $CACHE/scratch/loadtest | cut -f1) MiB, files $(find $CACHE/scratch/loadtest -name '*.seg' | wc -l)"
[ -n "$AFTER_SETTLED" ] && eval "$AFTER_SETTLED"
stop_sundial
