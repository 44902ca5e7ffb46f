#!/bin/bash
# counts-settled.sh BIN DATA [N]: starts BIN on a copy of the settled data directory DATA (a fresh copy each
# call, so every binary reads the same files), runs N (5 by default) `SELECT count(usage_user) FROM cpu`
# through /query and then `SELECT count(*) FROM cpu` through /api/v1/sql, each timed with the server's CPU
# over it, and stops it. PERF=1 records the server over the counts (${TMPDIR:-/tmp}/perf-counts.data,
# PERFARGS as for perf record).
BIN=$1; DATA=$2; N=${3:-5}
. "$(dirname "$0")/../2026-11-23-vm/serve.sh"
PORT=18767
COPY=$CACHE/scratch/counts-copy
rm -rf "$COPY" && cp -a "$DATA" "$COPY" || exit 1
start_sundial "$BIN" "$COPY" $PORT "${TMPDIR:-/tmp}/counts-server.log" || exit 1
cpu() { awk '{print $14+$15}' /proc/$SP/stat; }
run() {
  local c0 a b r
  c0=$(cpu); a=$(date +%s.%N)
  r=$(curl -s -G "127.0.0.1:$PORT/$1" --data-urlencode db=benchmark --data-urlencode "q=$2" | head -c 120)
  b=$(date +%s.%N)
  echo "$1 $2: $(echo "$b - $a" | bc | cut -c1-5) s, server cpu $(awk -v c=$c0 '{printf "%.2f", ($14+$15-c)/100}' /proc/$SP/stat) s; $r"
}
run query "SELECT count(usage_user) FROM cpu" > /dev/null # the first read of the files after the start
if [ -n "$PERF" ]; then perf record ${PERFARGS:--F 999 -g} -o ${TMPDIR:-/tmp}/perf-counts.data -p $SP > /dev/null 2>&1 & PP=$!; sleep 0.5; fi
for i in $(seq "$N"); do run query "SELECT count(usage_user) FROM cpu"; done
run api/v1/sql "SELECT count(*) FROM cpu"
[ -n "$PERF" ] && { kill -INT $PP; wait $PP; }
stop_sundial
rm -rf "$COPY"
