#!/bin/bash
# qab2.sh ROUNDS DATA_DIR SCALE QUERY_TYPE BIN... : for each round, for each binary in turn, `sundial serve`
# on a copy of DATA_DIR (a settled data directory: SCALE 100 = TSBS cpu at 100 hosts × 4 days, 4000 =
# 4,000 hosts × 12 h), TSBS's 20-query file of QUERY_TYPE at 1 worker twice, and each run's latencies and
# the server's CPU seconds over it: the first run after the start (nothing decoded kept yet) and the
# second (the same queries again; WORKERS=8 runs them at 8 workers), as ../2026-11-29-xeon-runchunks/qab.sh prints only the second.
ROUNDS=$1; DATA=$2; SC=$3; QT=$4; shift 4
. "$(dirname "$0")/../2026-11-23-vm/serve.sh"
PORT=18769
case $SC in
  4000) G=$(ls $CACHE/tsbs/queries/$QT-s4000-2016-01-01T000000Z-2016-01-01T120001Z-seed123-n20.gob) ;;
  100) G=$(ls $CACHE/tsbs/queries/$QT-s100-2016-01-01T000000Z-2016-01-05T000001Z-seed123-n20.gob) ;;
  *) echo "SCALE is 4000 or 100" >&2; exit 2 ;;
esac
cpu() { awk '{printf "%.2f", ($14+$15)/100}' /proc/$SP/stat; }
for r in $(seq $ROUNDS); do
  for BIN in "$@"; do
    rm -rf $CACHE/scratch/qab2 && cp -a "$DATA" $CACHE/scratch/qab2
    start_sundial "$BIN" $CACHE/scratch/qab2 $PORT ${TMPDIR:-/tmp}/qab2-server.log || exit 1
    run() { "$TSBS_BIN/tsbs_run_queries_influx" --file=$G --urls=http://127.0.0.1:$PORT --db-name=benchmark --workers=${WORKERS:-1} --print-interval=20 2>&1 | grep "mean:" | tail -1 | sed 's/min:.*med/med/; s/max:.*count: 20//'; }
    for pass in first second; do
      c0=$(cpu); line=$(run); c1=$(cpu)
      echo "round $r $(basename $BIN) $QT $pass: $line | server cpu $(echo "$c1 - $c0" | bc) s"
    done
    curl -s 127.0.0.1:$PORT/debug/vars | python3 -c 'import json,sys; print("   decoded_pages", json.load(sys.stdin)["sundial"].get("decoded_pages"))'
    stop_sundial
  done
done
