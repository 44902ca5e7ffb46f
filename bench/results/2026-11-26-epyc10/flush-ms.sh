#!/bin/bash
# flush-ms.sh FILE BIN...: per binary, a fresh `sundial serve --flush-idle-secs 5` (debug log of the storage
# crate) loaded with FILE by tsbs_load_influx, then 12 s idle so that the last memtable flushes alone; prints
# each flush's rows and wall milliseconds from the log. The first flushes share the two cores with the load,
# the last one runs with the writer idle.
. "$(dirname "$0")/../2026-11-23-vm/serve.sh"
FILE=$1; shift
W=${TMPDIR:-/tmp}/sundial-flush-ms PORT=18119
for BIN in "$@"; do
  rm -rf $W; mkdir -p $W
  RUST_LOG=sundial_storage=debug "$BIN" serve --data-dir $W/data --http-addr 127.0.0.1:$PORT --pg-addr 127.0.0.1:0 --flush-idle-secs 5 > $W/server.log 2>&1 &
  SP=$!
  for _ in $(seq 100); do curl -s -o /dev/null -w '%{http_code}' "127.0.0.1:$PORT/ping" | grep -q 204 && break; sleep 0.1; done
  create_benchmark_db $PORT
  load_influx $PORT $W/load.log "$FILE"
  sleep 12
  echo "$(basename "$BIN"): $(sed 's/\x1b\[[0-9;]*m//g' $W/server.log | grep flushed | grep -o 'rows=[0-9]* segments=[0-9]* ms=[0-9]*' | tr '\n' ' ')"
  kill $SP; wait $SP 2>/dev/null
done
