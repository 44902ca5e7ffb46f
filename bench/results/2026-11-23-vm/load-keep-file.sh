#!/bin/bash
# usage: load-keep-file.sh BIN DATAFILE DIR  -- loads, then stops the server gracefully, keeps DIR/data
BIN=$1; DATA=$2; OUT=$3; PORT=18096
rm -rf $OUT; mkdir -p $OUT
$BIN serve --data-dir $OUT/data --http-addr 127.0.0.1:$PORT --pg-addr 127.0.0.1:0 --flush-idle-secs 10 > $OUT/server.log 2>&1 &
SP=$!
for i in $(seq 50); do curl -s -o /dev/null -w '%{http_code}' 127.0.0.1:$PORT/ping | grep -q 204 && break; sleep 0.2; done
curl -s -XPOST "127.0.0.1:$PORT/query" --data-urlencode 'q=CREATE DATABASE benchmark' >/dev/null
~/.cache/sundial/tsbs/bin/tsbs_load_influx --urls=http://127.0.0.1:$PORT --db-name=benchmark --workers=2 --batch-size=10000 --gzip=false --do-create-db=false --file $DATA > $OUT/load.log 2>&1
sleep 15
for i in 1; do /usr/bin/time -f "count %e s" curl -s -XPOST "127.0.0.1:$PORT/query?db=benchmark" --data-urlencode 'q=SELECT count(usage_user) FROM cpu'; echo; done
kill $SP; wait $SP
du -sh $OUT/data
