#!/bin/bash
# usage: keepalive-ab.sh DATA N BIN... -- keep-alive latency of a few queries per binary
DATA=$1; N=$2; shift 2
for BIN in "$@"; do
  rm -rf /tmp/kq && mkdir -p /tmp/kq && cp -r $DATA /tmp/kq/data
  $BIN serve --data-dir /tmp/kq/data --http-addr 127.0.0.1:18111 --pg-addr 127.0.0.1:0 > /tmp/kq/log 2>&1 &
  SP=$!; sleep 3
  echo "== $(basename $BIN)"
  python3 "$(dirname "$0")/keepalive-latency.py" 18111 $N "SELECT max(usage_user) from cpu where (hostname = 'host_49') and time >= '2016-01-02T13:20:52Z' and time < '2016-01-02T14:20:52Z' group by time(1m)" \
    "SELECT max(usage_user) from cpu where (hostname = 'host_49') and time >= '2016-01-02T13:20:52Z' and time < '2016-01-03T01:20:52Z' group by time(1m)" \
    "SELECT max(usage_user), max(usage_system), max(usage_idle), max(usage_nice), max(usage_iowait) from cpu where (hostname = 'host_49') and time >= '2016-01-02T13:20:52Z' and time < '2016-01-03T01:20:52Z' group by time(1m)" \
    "SELECT max(usage_user), max(usage_system), max(usage_idle), max(usage_nice), max(usage_iowait) from cpu where (hostname = 'host_49' or hostname = 'host_3' or hostname = 'host_35' or hostname = 'host_39' or hostname = 'host_75' or hostname = 'host_15' or hostname = 'host_21' or hostname = 'host_11') and time >= '2016-01-02T18:55:05Z' and time < '2016-01-02T19:55:05Z' group by time(1m)" \
    "SELECT mean(usage_user) from cpu where time >= '2016-01-02T13:20:52Z' and time < '2016-01-03T01:20:52Z' group by time(1h),hostname"
  kill $SP; wait $SP
done
