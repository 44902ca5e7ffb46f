#!/bin/bash
# Keep-alive latency (keepalive-latency.py: N queries after 50 warm-up ones) of five TSBS-shaped queries over
# 100 hosts × 4 days, per binary, each on a fresh copy of DATA_DIR.
#
#   bash bench/results/2026-11-23-vm/keepalive-ab.sh DATA_DIR N BIN...
set -u
DATA=$1 N=$2
shift 2
. "$(dirname "$0")/serve.sh"
for BIN in "$@"; do
  rm -rf /tmp/kq && mkdir -p /tmp/kq && cp -r "$DATA" /tmp/kq/data
  start_sundial "$BIN" /tmp/kq/data 18111 /tmp/kq/log
  sleep 3
  echo "== $(basename $BIN)"
  python3 "$(dirname "$0")/keepalive-latency.py" 18111 $N "SELECT max(usage_user) from cpu where (hostname = 'host_49') and time >= '2016-01-02T13:20:52Z' and time < '2016-01-02T14:20:52Z' group by time(1m)" \
    "SELECT max(usage_user) from cpu where (hostname = 'host_49') and time >= '2016-01-02T13:20:52Z' and time < '2016-01-03T01:20:52Z' group by time(1m)" \
    "SELECT max(usage_user), max(usage_system), max(usage_idle), max(usage_nice), max(usage_iowait) from cpu where (hostname = 'host_49') and time >= '2016-01-02T13:20:52Z' and time < '2016-01-03T01:20:52Z' group by time(1m)" \
    "SELECT max(usage_user), max(usage_system), max(usage_idle), max(usage_nice), max(usage_iowait) from cpu where (hostname = 'host_49' or hostname = 'host_3' or hostname = 'host_35' or hostname = 'host_39' or hostname = 'host_75' or hostname = 'host_15' or hostname = 'host_21' or hostname = 'host_11') and time >= '2016-01-02T18:55:05Z' and time < '2016-01-02T19:55:05Z' group by time(1m)" \
    "SELECT mean(usage_user) from cpu where time >= '2016-01-02T13:20:52Z' and time < '2016-01-03T01:20:52Z' group by time(1h),hostname"
  stop_sundial
done
