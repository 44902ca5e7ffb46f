#!/bin/bash
# lag.sh BIN FILE: load, then time each count query until it sees every row
BIN=$1; F=$2; shift 2
D=/root/.cache/sundial/scratch/loadtest; rm -rf $D; mkdir -p $D
PORT=18766
$BIN serve --data-dir $D --http-addr 127.0.0.1:$PORT --pg-addr 127.0.0.1:0 --flush-idle-secs 10 --compact-full-write-cold-secs 20 "$@" > ${TMPDIR:-/tmp}/load-server.log 2>&1 &
SP=$!
for i in $(seq 50); do curl -s -o /dev/null -w '%{http_code}' 127.0.0.1:$PORT/ping | grep -q 204 && break; sleep 0.2; done
curl -s -XPOST 127.0.0.1:$PORT/query --data-urlencode "q=CREATE DATABASE benchmark" >/dev/null
T0=$(date +%s.%N)
~/.cache/sundial/tsbs/bin/tsbs_load_influx --urls=http://127.0.0.1:$PORT --db-name=benchmark --workers=2 --batch-size=10000 --gzip=false --do-create-db=false --reporting-period=0s --file=$F 2>&1 | grep -E "rows in"
T1=$(date +%s.%N)
if [ -n "$PERF" ]; then perf record -F 999 --call-graph dwarf,16384 -o ${TMPDIR:-/tmp}/perf-count.data -p $SP > /dev/null 2>&1 & PP=$!; sleep 0.3; fi
ROWS=$(wc -l < $F)
while :; do
  a=$(date +%s.%N)
  n=$(curl -s -G 127.0.0.1:$PORT/query --data-urlencode db=benchmark --data-urlencode 'q=SELECT count(usage_user) FROM cpu' | grep -o '"values":\[\[[^]]*' | grep -o '[0-9]*$')
  b=$(date +%s.%N)
  echo "count $n took $(echo "$b - $a" | bc | cut -c1-5) s at $(echo "$b - $T1" | bc | cut -c1-5) s after the loader"
  [ "$n" = "$ROWS" ] && break; sleep 0.05
done
[ -n "$PERF" ] && { kill -INT $PP; wait $PP; }
grep -iE "flush|froze|compact" ${TMPDIR:-/tmp}/load-server.log | tail -5
kill $SP; wait $SP
