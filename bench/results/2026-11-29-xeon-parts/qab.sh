#!/bin/bash
# qab.sh ROUNDS DATA_DIR SCALE QUERY_TYPE BIN... : ../2026-11-29-xeon-runchunks/qab.sh for either query
# scenario: SCALE 100 (TSBS cpu at 100 hosts × 4 days, bench/compare's scenario 1 file) or 4000 (4,000
# hosts × 12 h, scenario 2). For each round, for each binary in turn, starts `sundial serve` on a copy of
# DATA_DIR (settled), runs the 20-query file (1 worker) twice, and prints the second run's latencies, the
# server's CPU seconds and minor faults over it, and its peak RSS.
ROUNDS=$1; DATA=$2; SCALE=$3; QT=$4; shift 4
. "$(dirname "$0")/../2026-11-23-vm/serve.sh"
PORT=18767
G=$(ls $CACHE/tsbs/queries/$QT-s$SCALE-2016-01-01T000000Z-*-seed123-n20.gob)
stat_of() { awk '{printf "%.2f %d", ($14+$15)/100, $10}' /proc/$SP/stat; }
for r in $(seq $ROUNDS); do
  for BIN in "$@"; do
    rm -rf $CACHE/scratch/qab && cp -a "$DATA" $CACHE/scratch/qab
    start_sundial "$BIN" $CACHE/scratch/qab $PORT ${TMPDIR:-/tmp}/qab-server.log || exit 1
    run() { "$TSBS_BIN/tsbs_run_queries_influx" --file=$G --urls=http://127.0.0.1:$PORT --db-name=benchmark --workers=1 --print-interval=20 2>&1 | grep "mean:" | tail -1; }
    run > /dev/null
    read c0 f0 <<< "$(stat_of)"
    line=$(run | sed 's/min:.*med/med/; s/max:.*count: 20//')
    read c1 f1 <<< "$(stat_of)"
    echo "round $r $(basename $BIN) $QT: $line | server cpu $(echo "$c1 - $c0" | bc) s, minor faults $((f1 - f0)), $(grep VmHWM /proc/$SP/status | tr -s ' ')"
    stop_sundial
  done
done
