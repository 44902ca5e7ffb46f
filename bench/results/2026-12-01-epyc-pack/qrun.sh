#!/bin/bash
# qrun.sh BIN TYPE WORKERS N [perf]: start BIN on the settled scenario-2 directory, warm up with WARM (200) queries,
# then run N queries of TYPE with WORKERS workers; print TSBS's summary and the server's CPU for the run.
# The directory: scenario 2's file (4,000 hosts x 12 h) loaded by ../2026-11-28-epyc-hotquick/settled.sh, then
# $CACHE/scratch/loadtest moved to $CACHE/scratch/s2. Query files: tsbs_generate_queries --use-case=cpu-only
# --seed=123 --scale=4000 --timestamp-start=2016-01-01T00:00:00Z --timestamp-end=2016-01-01T12:00:01Z
# --queries=2000 --query-type=TYPE --format=influx --file=$QDIR/TYPE.gob (QDIR default /tmp/q).
# perf: PERFARGS="-F 199 --call-graph dwarf,16384" records the server during the run; VARS=1 prints the
# decoded-page cache's counters at the end.
BIN=$1; T=$2; W=$3; N=$4; P=$5
. /work/main/bench/results/2026-11-23-vm/serve.sh
PORT=18770
start_sundial "$BIN" $CACHE/scratch/s2 $PORT ${TMPDIR:-/tmp}/qrun-server.log || exit 1
cpu() { awk '{printf "%.2f", ($14+$15)/100}' /proc/$SP/stat; }
$TSBS_BIN/tsbs_run_queries_influx --urls=http://127.0.0.1:$PORT --db-name=benchmark --workers=$W --max-queries=${WARM:-200} --file=${QDIR:-/tmp/q}/$T.gob --print-interval=0 > /dev/null 2>&1
c0=$(cpu)
if [ -n "$P" ]; then perf record $PERFARGS -o ${TMPDIR:-/tmp}/qrun-perf.data -p $SP > /dev/null 2>&1 & PP=$!; sleep 0.3; fi
/usr/bin/time -f "client cpu %U+%S s" $TSBS_BIN/tsbs_run_queries_influx --urls=http://127.0.0.1:$PORT --db-name=benchmark --workers=$W --max-queries=$N --file=${QDIR:-/tmp/q}/$T.gob --print-interval=0 2>&1 | grep -E "^min|mean|client cpu|Run complete|wall" | head -8
c1=$(cpu)
[ -n "$P" ] && { kill -INT $PP; wait $PP; }
echo "server cpu $(echo "$c1 - $c0" | bc) s for $N queries"
[ -n "$VARS" ] && curl -s 127.0.0.1:$PORT/debug/vars | python3 -c "import json,sys; v=json.load(sys.stdin)[\"sundial\"]; print({k: v[k] for k in (\"decoded_pages\",) if k in v})"
stop_sundial
