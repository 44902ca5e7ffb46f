#!/bin/bash
# load-ab.sh FILE ROWS "BIN ARGS"...: per binary, a fresh `sundial serve --flush-idle-secs 10` loaded with FILE
# by tsbs_load_influx (2 workers, batch 10,000: serve.sh's load_influx), then count(usage_user) polled until it
# sees ROWS rows: committed seconds and rows/s, the server's CPU (utime + stime) until then, and its minor
# page faults. Alternate binaries (OLD NEW OLD NEW ...): this machine's spread is larger than most changes.
. "$(dirname "$0")/../2026-11-23-vm/serve.sh"
FILE=$1 ROWS=$2; shift 2
W=${TMPDIR:-/tmp}/sundial-load-ab PORT=18116
for SPEC in "$@"; do
  rm -rf $W; mkdir -p $W
  BIN=${SPEC%% *}; EXTRA=${SPEC#"$BIN"}
  "$BIN" serve --data-dir $W/data --http-addr 127.0.0.1:$PORT --pg-addr 127.0.0.1:0 --flush-idle-secs 10 $EXTRA > $W/server.log 2>&1 &
  SP=$!
  for _ in $(seq 100); do curl -s -o /dev/null -w '%{http_code}' "127.0.0.1:$PORT/ping" | grep -q 204 && break; sleep 0.1; done
  create_benchmark_db $PORT
  t0=$(date +%s.%N); c0=$(awk '{print $14+$15}' /proc/$SP/stat)
  load_influx $PORT $W/load.log "$FILE"
  wait_for_rows $PORT $ROWS
  t1=$(date +%s.%N); c1=$(awk '{print $14+$15}' /proc/$SP/stat)
  printf "minflt %s %-30s committed %6.2f s = %7.0f rows/s  server cpu %6.2f s\n" "$(awk '{print $10}' /proc/$SP/stat)" "$(basename "$SPEC")" \
    "$(echo "$t1-$t0" | bc)" "$(echo "$ROWS/($t1-$t0)" | bc)" "$(echo "($c1-$c0)/100" | bc -l)"
  kill $SP; wait $SP 2>/dev/null
done
