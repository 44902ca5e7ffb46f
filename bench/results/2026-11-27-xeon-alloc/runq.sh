#!/bin/bash
# runq.sh BIN DATA QFILE [PERF_SECS] : start server on a copy-less data dir, run queries 1 worker; optional perf record
BIN=$1; DATA=$2; Q=$3; PS=${4:-0}
PORT=18765
$BIN serve --data-dir $DATA --http-addr 127.0.0.1:$PORT --pg-addr 127.0.0.1:0 > ${TMPDIR:-/tmp}/server.log 2>&1 &
SP=$!
for i in $(seq 50); do curl -s -o /dev/null -w '%{http_code}' 127.0.0.1:$PORT/ping | grep -q 204 && break; sleep 0.2; done
# warm
~/.cache/sundial/tsbs/bin/tsbs_run_queries_influx --file=$Q --urls=http://127.0.0.1:$PORT --db-name=benchmark --workers=1 --max-queries=30 --print-interval=0 2>&1 | grep -E "mean|Run complete" | head -3 >/dev/null
if [ "$PS" != 0 ]; then perf record -F 1999 $PERFARGS -o ${TMPDIR:-/tmp}/perf.data -p $SP -- sleep $PS > /dev/null 2>&1 & PP=$!; fi
~/.cache/sundial/tsbs/bin/tsbs_run_queries_influx --file=$Q --urls=http://127.0.0.1:$PORT --db-name=benchmark --workers=1 --print-interval=0 2>&1 | grep -E "mean:|Run complete" 
[ "$PS" != 0 ] && wait $PP
kill $SP; wait $SP
