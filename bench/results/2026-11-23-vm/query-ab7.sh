#!/bin/bash
# As query-ab.sh, for a noisy machine: each TSBS query type (bench/compare's 20-query file of SUFFIX) is
# run RUNS times (default 7) per server start, after one warm-up run, and the minimum / median of the
# runs' means is printed. WORKERS (default 1) sets the runner's workers. Pairs alternate binaries, each
# on a fresh copy of its data directory:
#
#   bash bench/results/2026-11-23-vm/query-ab7.sh SUFFIX "TYPES" BIN=DATA_DIR ...      # SUFFIX: s100 or s4000
set -u
SUF=$1 TYPES=$2 PORT=18099 W=/tmp/qab7 RUNS=${RUNS:-7} WORKERS=${WORKERS:-1}
shift 2
. "$(dirname "$0")/serve.sh"
Q=$CACHE/tsbs/queries
for PAIR in "$@"; do
  BIN=${PAIR%%=*} SRC=${PAIR#*=}
  rm -rf $W; mkdir -p $W; cp -r "$SRC" $W/data
  start_sundial "$BIN" $W/data $PORT $W/server.log
  sleep 2
  line="$(basename "$BIN"):"
  for t in $TYPES; do
    f=$(ls $Q/$t-$SUF-*.gob | grep -v "\.[a-z]*\.gob$" | head -1)
    run() { "$TSBS_BIN/tsbs_run_queries_influx" --file "$f" --urls http://127.0.0.1:$PORT --db-name benchmark --workers "$WORKERS" --print-interval 0 2>&1; }
    run > /dev/null
    means=$(for _ in $(seq "$RUNS"); do run | grep -A1 "^$t\|^Influx" | grep -o "mean: *[0-9.]*ms" | head -1 | grep -o "[0-9.]*"; done | sort -n)
    line="$line $t=$(echo "$means" | awk '{v[NR]=$1} END {print v[1] "/" v[int((NR+1)/2)]}')"
  done
  echo "$line"
  stop_sundial
done
rm -rf $W
