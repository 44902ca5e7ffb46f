#!/bin/bash
# qab.sh ROUNDS DATA_DIR QUERY_TYPE BIN... : for each round, for each binary in turn, starts `sundial serve`
# on a copy of DATA_DIR (a settled data directory of TSBS's cpu at 4,000 hosts × 12 h), runs TSBS's
# QUERY_TYPE file (20 queries, 1 worker, as bench/compare runs them) twice (the first run warms the
# server), and prints the second run's latencies, the server's CPU seconds and minor faults over it, and
# its peak RSS. SCALE=100 runs scenario 1's query files instead (100 hosts × 4 days: DATA_DIR of that).
ROUNDS=$1; DATA=$2; QT=$3; shift 3
. "$(dirname "$0")/../2026-11-23-vm/serve.sh"
PORT=18767
case ${SCALE:-4000} in
  4000) G=$(ls $CACHE/tsbs/queries/$QT-s4000-2016-01-01T000000Z-2016-01-01T120001Z-seed123-n20.gob) ;;
  100) G=$(ls $CACHE/tsbs/queries/$QT-s100-2016-01-01T000000Z-2016-01-05T000001Z-seed123-n20.gob) ;;
  *) echo "SCALE is 4000 or 100" >&2; exit 2 ;;
esac
stat_of() { awk '{printf "%.2f %d", ($14+$15)/100, $10}' /proc/$SP/stat; }
for r in $(seq $ROUNDS); do
  for BIN in "$@"; do
    rm -rf $CACHE/scratch/qab && cp -a "$DATA" $CACHE/scratch/qab
    start_sundial "$BIN" $CACHE/scratch/qab $PORT ${TMPDIR:-/tmp}/qab-server.log || exit 1
    run() { "$TSBS_BIN/tsbs_run_queries_influx" --file=$G --urls=http://127.0.0.1:$PORT --db-name=benchmark --workers=1 --print-interval=20 2>&1 | grep "mean:" | tail -1; }
    run > /dev/null
    read c0 f0 <<< "$(stat_of)"
    line=$(run)
    read c1 f1 <<< "$(stat_of)"
    echo "round $r $(basename $BIN) $QT: $line | server cpu $(echo "$c1 - $c0" | bc) s, minor faults $((f1 - f0)), $(grep VmHWM /proc/$SP/status | tr -s ' ')"
    stop_sundial
  done
done
