#!/bin/bash
# fieldscan.sh BIN FILE: ../2026-11-28-epyc-hotquick/settled.sh (load FILE, wait until committed and settled),
# then statements that DataFusion answers by scanning every series (a condition on a field), each timed, with
# the server's CPU over each. PERFQ=1 records the server with perf (PERFARGS) during the first statement.
export AFTER_SETTLED='
run() { local c0 a b r; c0=$(awk "{print \$14+\$15}" /proc/$SP/stat); a=$(date +%s.%N); r=$(curl -s -G "127.0.0.1:$PORT/$1" --data-urlencode db=benchmark --data-urlencode "q=$2" | head -c 200); b=$(date +%s.%N)
  echo "$1 $2: $(echo "$b - $a" | bc | cut -c1-5) s, server cpu $(awk -v c=$c0 "{printf \"%.2f\", (\$14+\$15-c)/100}" /proc/$SP/stat) s, VmHWM $(grep VmHWM /proc/$SP/status | tr -s " " | cut -d" " -f2) kB; $r"; }
if [ -n "$PERFQ" ]; then perf record $PERFARGS -o ${TMPDIR:-/tmp}/perf-query.data -p $SP > /dev/null 2>&1 & PQ=$!; sleep 1; fi
run api/v1/sql "SELECT count(*) FROM cpu WHERE usage_user > 50"
[ -n "$PERFQ" ] && { kill -INT $PQ; wait $PQ; }
run api/v1/sql "SELECT count(*) FROM cpu WHERE usage_user > 50"
run api/v1/sql "SELECT max(usage_user), min(usage_system) FROM cpu WHERE usage_idle < 50"
run api/v1/sql "SELECT hostname, usage_user FROM cpu WHERE usage_user > 99.99 ORDER BY hostname LIMIT 3"
run api/v1/sql "SELECT region, count(*) FROM cpu WHERE usage_user > 50 GROUP BY region ORDER BY region"
run api/v1/sql "SELECT * FROM cpu LIMIT 2"
run query "SELECT count(usage_user) FROM cpu WHERE usage_user > 50"'
exec bash "$(dirname "$0")/../2026-11-28-epyc-hotquick/settled.sh" "$@"
