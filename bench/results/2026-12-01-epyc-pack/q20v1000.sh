#!/bin/bash
# q20v1000.sh BIN: on the settled scenario-2 directory (qrun.sh), per type: 20 queries at 1 worker, 20 at 8 workers
# (what bench/compare's full profile ran per type before --query-run-seconds), then 1,000 at 8 workers; twice.
. /work/main/bench/results/2026-11-23-vm/serve.sh
PORT=18771
start_sundial "$1" $CACHE/scratch/s2 $PORT ${TMPDIR:-/tmp}/q20v1000-server.log || exit 1
R="$TSBS_BIN/tsbs_run_queries_influx --urls=http://127.0.0.1:$PORT --db-name=benchmark --print-interval=0"
for t in single-groupby-1-1-1 lastpoint; do for i in 1 2; do
  echo "== $t 1w 20"; $R --workers=1 --max-queries=20 --file=${QDIR:-/tmp/q}/$t.gob | grep -E "^min" | head -1
  echo "== $t 8w 20"; $R --workers=8 --max-queries=20 --file=${QDIR:-/tmp/q}/$t.gob | grep -E "^min" | head -1
  echo "== $t 8w 1000"; $R --workers=8 --max-queries=1000 --file=${QDIR:-/tmp/q}/$t.gob | grep -E "^min" | head -1
done; done
stop_sundial
