#!/bin/bash
# load-keep.sh from a TSBS data file (influx format) instead of the generator, settling 15 s.
#
#   bash bench/results/2026-11-23-vm/load-keep-file.sh BIN DATAFILE DIR
set -u
BIN=$1 DATA=$2 OUT=$3 PORT=18096
. "$(dirname "$0")/serve.sh"
rm -rf "$OUT"; mkdir -p "$OUT"
start_sundial "$BIN" "$OUT/data" $PORT "$OUT/server.log"
create_benchmark_db $PORT
load_influx $PORT "$OUT/load.log" "$DATA"
sleep 15
/usr/bin/time -f "count %e s" curl -s -XPOST "127.0.0.1:$PORT/query?db=benchmark" --data-urlencode 'q=SELECT count(usage_user) FROM cpu'; echo
stop_sundial
du -sh "$OUT/data"
