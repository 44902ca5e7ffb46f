#!/bin/bash
# usage: load-keep.sh BIN SCALE START END DIR -- generates TSBS cpu-only data, loads it, waits for compaction to settle, stops the server, keeps DIR/data
BIN=$1; SCALE=$2; START=$3; END=$4; OUT=$5; PORT=18096; T=~/.cache/sundial/tsbs/bin
rm -rf $OUT; mkdir -p $OUT
$BIN serve --data-dir $OUT/data --http-addr 127.0.0.1:$PORT --pg-addr 127.0.0.1:0 --flush-idle-secs 10 > $OUT/server.log 2>&1 &
SP=$!
for i in $(seq 50); do curl -s -o /dev/null -w '%{http_code}' 127.0.0.1:$PORT/ping | grep -q 204 && break; sleep 0.2; done
curl -s -XPOST "127.0.0.1:$PORT/query" --data-urlencode 'q=CREATE DATABASE benchmark' >/dev/null
$T/tsbs_generate_data --use-case=cpu-only --seed=123 --scale=$SCALE --timestamp-start=$START --timestamp-end=$END --log-interval=10s --format=influx 2>/dev/null | \
  $T/tsbs_load_influx --urls=http://127.0.0.1:$PORT --db-name=benchmark --workers=2 --batch-size=10000 --gzip=false --do-create-db=false > $OUT/load.log 2>&1
tail -3 $OUT/load.log
sleep 60
/usr/bin/time -f "count %e s" curl -s -XPOST "127.0.0.1:$PORT/query?db=benchmark" --data-urlencode 'q=SELECT count(usage_user) FROM cpu'; echo
kill $SP; wait $SP
du -sh $OUT/data; ls $OUT/data/*/* | head
