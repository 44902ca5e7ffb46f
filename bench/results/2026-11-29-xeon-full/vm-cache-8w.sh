#!/bin/bash
# VictoriaMetrics's 8-worker TSBS runs follow its 1-worker runs of the same queries (bench/compare runs each type
# with 1 then 8 workers on one server): with its default response cache the second run can be answered from it.
# Same data and queries as scenario 1 (100 hosts x 4 days), 1 then 8 workers on one server start, with the
# default cache and with -search.disableCache. Run on a quiet machine: bash vm-cache-8w.sh
set -e
VM=~/.cache/sundial/peers/victoriametrics/v1.122.0/victoria-metrics
T=~/.cache/sundial/tsbs/bin
D=${VMTEST_DIR:-/tmp/vmtest}; rm -rf $D; mkdir -p $D
TYPES="single-groupby-1-1-1 single-groupby-1-8-1 single-groupby-5-8-1 cpu-max-all-8 double-groupby-1"
start() { $VM -storageDataPath=$D/data -httpListenAddr=127.0.0.1:18428 -retentionPeriod=100y "$@" > $D/vm.log 2>&1 & echo $! > $D/pid; for i in $(seq 100); do curl -sf http://127.0.0.1:18428/health >/dev/null && break; sleep 0.2; done; }
stop() { kill $(cat $D/pid); wait $(cat $D/pid) 2>/dev/null || true; sleep 1; }
start
$T/tsbs_load_victoriametrics --file=$HOME/.cache/sundial/tsbs/data/cpu-only-s100-2016-01-01T000000Z-2016-01-05T000000Z-seed123.influx.lp --urls=http://127.0.0.1:18428/write --workers=2 --batch-size=10000 2>&1 | tail -1
sleep 3; curl -s http://127.0.0.1:18428/internal/force_flush; curl -s http://127.0.0.1:18428/internal/force_merge; sleep 5
for q in $TYPES; do
  $T/tsbs_generate_queries --use-case=cpu-only --seed=123 --scale=100 --timestamp-start=2016-01-01T00:00:00Z --timestamp-end=2016-01-05T00:00:01Z --queries=20 --query-type=$q --format=victoriametrics --file=$D/$q.gob
done
stop
for mode in default nocache; do
  if [ $mode = nocache ]; then start -search.disableCache; else start; fi
  for q in $TYPES; do
    for w in 1 8; do
      m=$($T/tsbs_run_queries_victoriametrics --file=$D/$q.gob --urls=http://127.0.0.1:18428 --workers=$w --print-interval=0 2>&1 | grep -A1 "^all queries\|^VictoriaMetrics" | grep -o "mean: *[0-9.]*ms" | head -1)
      echo "$mode $q workers=$w $m"
    done
  done
  stop
done
