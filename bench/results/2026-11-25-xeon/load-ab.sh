#!/bin/bash
# Committed ingest A/B: loads FILE (a cached TSBS influx file, e.g. ~/.cache/sundial/tsbs/data/cpu-only-s4000-*.lp)
# into each BIN in turn, each on a fresh data directory, with tsbs_load_influx (2 workers, batches of 10,000),
# and prints per run the time until `SELECT count(usage_user) FROM cpu` sees ROWS rows (committed rows/s) and
# the server's CPU seconds (utime + stime) over that time and its peak RSS (VmHWM). Alternate binaries to see the machine's spread:
#
#   bash bench/results/2026-11-25-xeon/load-ab.sh FILE ROWS OLD_BIN NEW_BIN OLD_BIN NEW_BIN
set -u
FILE=$1 ROWS=$2
shift 2
. "$(dirname "$0")/../2026-11-23-vm/serve.sh"
W=/tmp/load-ab PORT=18113
for BIN in "$@"; do
  rm -rf $W; mkdir -p $W
  start_sundial "$BIN" $W/data $PORT $W/server.log
  create_benchmark_db $PORT
  t0=$(date +%s.%N); c0=$(awk '{print $14+$15}' /proc/$SP/stat)
  load_influx $PORT $W/load.log "$FILE"
  while :; do
    n=$(curl -s -G 127.0.0.1:$PORT/query --data-urlencode db=benchmark --data-urlencode 'q=SELECT count(usage_user) FROM cpu' \
        | grep -o '"values":\[\[[^]]*' | grep -o '[0-9]*$')
    [ "$n" = "$ROWS" ] && break
    sleep 0.05
  done
  t1=$(date +%s.%N); c1=$(awk '{print $14+$15}' /proc/$SP/stat)
  hwm=$(awk '/VmHWM/ {print int($2/1024)}' /proc/$SP/status)
  printf "%-16s committed %6.2f s = %7.0f rows/s  server cpu %6.2f s  peak rss %5d MiB\n" "$(basename "$BIN")" \
    "$(echo "$t1-$t0" | bc)" "$(echo "$ROWS/($t1-$t0)" | bc)" "$(echo "($c1-$c0)/100" | bc -l)" "$hwm"
  stop_sundial
done
rm -rf $W
