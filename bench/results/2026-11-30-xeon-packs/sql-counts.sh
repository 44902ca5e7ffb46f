#!/bin/bash
# sql-counts.sh BIN FILE: ../2026-11-28-epyc-hotquick/settled.sh (load FILE, wait until committed and
# settled), then three SQL statements through /api/v1/sql and one InfluxQL through /query, each timed,
# with the server's CPU over each.
export AFTER_SETTLED='
run() { local c0 a b r; c0=$(awk "{print \$14+\$15}" /proc/$SP/stat); a=$(date +%s.%N); r=$(curl -s -G "127.0.0.1:$PORT/$1" --data-urlencode db=benchmark --data-urlencode "q=$2" | head -c 160); b=$(date +%s.%N)
  echo "$1 $2: $(echo "$b - $a" | bc | cut -c1-5) s, server cpu $(awk -v c=$c0 "{printf \"%.2f\", (\$14+\$15-c)/100}" /proc/$SP/stat) s; $r"; }
run api/v1/sql "SELECT count(*) FROM cpu"
run api/v1/sql "SELECT count(usage_user) FROM cpu"
run api/v1/sql "SELECT max(usage_user), min(usage_system) FROM cpu"
run query "SELECT count(usage_user) FROM cpu"'
exec bash "$(dirname "$0")/../2026-11-28-epyc-hotquick/settled.sh" "$@"
