#!/bin/bash
# q.sh BIN [PERF_OUT]: serves the settled scenario-2 data directory ($CACHE/scratch/q2, 4,000 hosts × 12 h, as
# ../../2026-11-28-epyc-dg/ab/qab.sh) with BIN, runs one warm-up pass of query type $Q (default lastpoint,
# 20 queries of the TSBS file, 1 worker), then $RUNS (default 5) passes printing each pass's median and mean;
# with PERF_OUT, perf records the server during those passes. Prints the server's CPU at the end.
source "$(dirname "$0")/../../2026-11-23-vm/serve.sh"
cd $CACHE/tsbs
BIN=$1; PERFOUT=$2; Q=${Q:-lastpoint}
start_sundial $BIN $CACHE/scratch/q2 18086 /tmp/lp-server.log --compact-full-write-cold-secs 20
bin/tsbs_run_queries_influx --file queries/$Q-s4000-2016-01-01T000000Z-2016-01-01T120001Z-seed123-n20.gob --urls http://127.0.0.1:18086 --workers 1 --print-interval 0 >/dev/null 2>&1
[ -n "$PERFOUT" ] && { perf record -F 999 -g -o $PERFOUT -p $SP >/dev/null 2>&1 & PP=$!; sleep 0.5; }
for i in $(seq 1 ${RUNS:-5}); do
bin/tsbs_run_queries_influx --file queries/$Q-s4000-2016-01-01T000000Z-2016-01-01T120001Z-seed123-n20.gob --urls http://127.0.0.1:18086 --workers 1 --print-interval 0 2>&1 | grep -A1 "all queries" | tail -1 | sed 's/.*med: *\([0-9.]*\)ms, mean: *\([0-9.]*\)ms.*/med \1 mean \2/'
done
[ -n "$PERFOUT" ] && { kill -INT $PP; wait $PP; }
echo "server cpu $(awk '{printf "%.2f", ($14+$15)/100}' /proc/$SP/stat)"
stop_sundial
