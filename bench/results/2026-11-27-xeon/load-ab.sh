#!/bin/bash
# load-ab.sh BIN FILE [extra server flags...] : fresh data dir, tsbs_load_influx 2 workers x 10000; prints rate, server CPU and peak RSS
BIN=$1; F=$2; shift 2
D=/root/.cache/sundial/scratch/loadtest; rm -rf $D; mkdir -p $D
PORT=18766
$BIN serve --data-dir $D --http-addr 127.0.0.1:$PORT --pg-addr 127.0.0.1:0 --flush-idle-secs 10 --compact-full-write-cold-secs 20 "$@" > ${TMPDIR:-/tmp}/load-server.log 2>&1 &
SP=$!
for i in $(seq 50); do curl -s -o /dev/null -w '%{http_code}' 127.0.0.1:$PORT/ping | grep -q 204 && break; sleep 0.2; done
curl -s -XPOST 127.0.0.1:$PORT/query --data-urlencode "q=CREATE DATABASE benchmark" >/dev/null
T0=$(date +%s.%N)
/usr/bin/time -f "loader cpu %U+%S s" ~/.cache/sundial/tsbs/bin/tsbs_load_influx --urls=http://127.0.0.1:$PORT --db-name=benchmark --workers=2 --batch-size=10000 --gzip=false --do-create-db=false --reporting-period=0s --file=$F 2>&1 | grep -E "loaded|loader cpu"
T1=$(date +%s.%N)
read -r U S <<< $(awk '{print $14, $15}' /proc/$SP/stat)
echo "wall $(echo "$T1 - $T0" | bc) server cpu $(echo "($U+$S)/100" | bc -l | cut -c1-6)"
grep VmHWM /proc/$SP/status
kill $SP; wait $SP
