#!/bin/bash
# count5.sh BIN FILE: a fresh server loads FILE (TSBS's loader as bench/compare runs it), then four counts
# (`SELECT count(usage_user) FROM cpu`) back to back, each timed, with the memtable's rows then; PERF=1
# records the server with perf over the counts (${TMPDIR:-/tmp}/perf-count.data; PERFARGS="..." replaces
# `-F 999 -g`: ../2026-11-30-xeon-packs takes DWARF stacks).
BIN=$1; F=$2; shift 2
. "$(dirname "$0")/../2026-11-23-vm/serve.sh"
PORT=18766
start_load_test "$BIN" $PORT "$@" || exit 1
ROWS=$(wc -l < $F)
"$TSBS_BIN/tsbs_load_influx" --urls=http://127.0.0.1:$PORT --db-name=benchmark --workers=2 --batch-size=10000 --gzip=false --do-create-db=false --reporting-period=0s --file=$F 2>&1 | grep -E "rows in"
if [ -n "$PERF" ]; then perf record ${PERFARGS:--F 999 -g} -o ${TMPDIR:-/tmp}/perf-count.data -p $SP > /dev/null 2>&1 & PP=$!; fi
for i in 1 2 3 4; do
  a=$(date +%s.%N); n=$(row_count $PORT); b=$(date +%s.%N)
  echo "count $n (of $ROWS) took $(echo "$b - $a" | bc | cut -c1-5) s; memtable $(curl -s 127.0.0.1:$PORT/debug/vars | python3 -c 'import json,sys; v=json.load(sys.stdin)["sundial"]; print(v["memtable_rows"], v["memtable_bytes"]>>20, "MiB")')"
done
[ -n "$PERF" ] && { kill -INT $PP; wait $PP; }
stop_sundial
