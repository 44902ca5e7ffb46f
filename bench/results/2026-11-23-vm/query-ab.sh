#!/bin/bash
# Each TSBS query type (bench/compare's 20-query file of SUFFIX, WORKERS workers, default 1) against each
# binary, each on a fresh copy of its own data directory, after one warm-up run. With RUNS=1 (the
# default) the mean of one run is printed; with more, the minimum / median of the runs' means (for a
# machine whose figures swing from run to run: query-ab7.sh). Pairs alternate binaries to show the
# spread, e.g. OLD=OLD_DIR NEW=NEW_DIR OLD=OLD_DIR NEW=NEW_DIR.
#
#   bash bench/results/2026-11-23-vm/query-ab.sh SUFFIX "TYPES" BIN=DATA_DIR ...      # SUFFIX: s100 or s4000
set -u
SUF=$1 TYPES=$2 PORT=18099 W=/tmp/qab RUNS=${RUNS:-1} WORKERS=${WORKERS:-1}
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
    if [ "$RUNS" = 1 ]; then
      line="$line $t=$means"
    else
      line="$line $t=$(echo "$means" | awk '{v[NR]=$1} END {print v[1] "/" v[int((NR+1)/2)]}')"
    fi
  done
  echo "$line"
  stop_sundial
done
rm -rf $W
