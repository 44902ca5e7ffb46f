#!/bin/bash
# usage: query-ab.sh SUFFIX "TYPES" BIN=DATA ... -- each TSBS query type (1 worker) against each binary on its own data copy; prints mean ms
SUF=$1; TYPES=$2; shift 2; PORT=18099; W=/tmp/qab; Q=~/.cache/sundial/tsbs/queries; T=~/.cache/sundial/tsbs/bin
for PAIR in "$@"; do
  BIN=${PAIR%%=*}; SRC=${PAIR#*=}
  rm -rf $W; mkdir -p $W; cp -r $SRC $W/data
  $BIN serve --data-dir $W/data --http-addr 127.0.0.1:$PORT --pg-addr 127.0.0.1:0 --flush-idle-secs 10 > $W/server.log 2>&1 &
  SP=$!
  for i in $(seq 900); do curl -s -o /dev/null -w '%{http_code}' 127.0.0.1:$PORT/ping | grep -q 204 && break; sleep 0.2; done
  sleep 2
  line="$(basename $BIN):"
  for t in $TYPES; do
    f=$(ls $Q/$t-$SUF-*.gob | grep -v "\.[a-z]*\.gob$" | head -1)
    $T/tsbs_run_queries_influx --file $f --urls http://127.0.0.1:$PORT --db-name benchmark --workers 1 --print-interval 0 > /dev/null 2>&1
    m=$($T/tsbs_run_queries_influx --file $f --urls http://127.0.0.1:$PORT --db-name benchmark --workers 1 --print-interval 0 2>&1 | grep -A1 "^$t\|^Influx" | grep -o "mean: *[0-9.]*ms" | head -1 | grep -o "[0-9.]*")
    line="$line $t=$m"
  done
  echo "$line"
  kill $SP; wait $SP
done
rm -rf $W
