#!/bin/bash
# count-after-load.sh BIN FILE [server flags...]: loads FILE (TSBS influx file) into a fresh server, then times
# NQ (default 6) `SELECT count(usage_user) FROM cpu` queries with curl while the rows are still in the memtable
# (the server flushes after 60 s idle). BEFORE / AFTER: shell text run (with $SP, $PORT set) before the first
# query and after the last (e.g. perf record -p $SP ...).
BIN=$1; F=$2; shift 2
. "$(dirname "$0")/../2026-11-23-vm/serve.sh"
PORT=18766
start_load_test "$BIN" $PORT "$@" || exit 1
"$TSBS_BIN/tsbs_load_influx" --urls=http://127.0.0.1:$PORT --db-name=benchmark --workers=2 --batch-size=10000 --gzip=false --do-create-db=false --reporting-period=0s --file=$F 2>&1 | grep -E "^loaded [0-9]+ rows"
[ -n "$BEFORE" ] && eval "$BEFORE"
for i in $(seq ${NQ:-6}); do
  curl -s -o /dev/null -w "%{time_total} " -G "127.0.0.1:$PORT/query" --data-urlencode db=benchmark --data-urlencode 'q=SELECT count(usage_user) FROM cpu'
done; echo
[ -n "$AFTER" ] && eval "$AFTER"
stop_sundial
