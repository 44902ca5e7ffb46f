#!/bin/bash
# Each TSBS query type (bench/compare's 20-query file of SUFFIX, 1 worker, run twice: the second run's mean is
# printed) against each binary, each on a fresh copy of its own data directory. Pairs alternate binaries to
# show the spread, e.g. OLD=OLD_DIR NEW=NEW_DIR OLD=OLD_DIR NEW=NEW_DIR.
#
#   bash bench/results/2026-11-23-vm/query-ab.sh SUFFIX "TYPES" BIN=DATA_DIR ...      # SUFFIX: s100 or s4000
set -u
SUF=$1 TYPES=$2 PORT=18099 W=/tmp/qab
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
    run() { "$TSBS_BIN/tsbs_run_queries_influx" --file "$f" --urls http://127.0.0.1:$PORT --db-name benchmark --workers 1 --print-interval 0 2>&1; }
    run > /dev/null
    m=$(run | grep -A1 "^$t\|^Influx" | grep -o "mean: *[0-9.]*ms" | head -1 | grep -o "[0-9.]*")
    line="$line $t=$m"
  done
  echo "$line"
  stop_sundial
done
rm -rf $W
