#!/bin/bash
# Where a settled Sundial data directory's bytes go at TSBS scenario 4 (1,000,000 hosts x 30 s = 3 M rows):
# load the cached scenario-4 line protocol (bench/compare's data cache), wait until the directory's size is
# stable for 30 s (flush after 10 s idle, compaction done), stop cleanly, list the files.
#   bash bench/results/2026-11-23-vm/s4-disk-breakdown.sh /path/to/sundial /tmp/s4dir
# Needs the file below (written by `bench/compare --profile full --scenarios 4 ...`) and TSBS's loader.
set -euo pipefail
BIN=$1; D=$2; PORT=${PORT:-18777}
LP=~/.cache/sundial/tsbs/data/cpu-only-s1000000-2016-01-01T000000Z-2016-01-01T000030Z-seed123.influx.lp
rm -rf "$D"; mkdir -p "$D"
"$BIN" serve --data-dir "$D/data" --http-addr 127.0.0.1:$PORT --pg-addr off --flush-idle-secs 10 > "$D/log" 2>&1 &
PID=$!; sleep 1
curl -s -XPOST "http://127.0.0.1:$PORT/query" --data-urlencode 'q=CREATE DATABASE benchmark' >/dev/null
t0=$(date +%s.%N)
~/.cache/sundial/tsbs/bin/tsbs_load_influx --urls http://127.0.0.1:$PORT --db-name benchmark --workers 2 \
  --batch-size 10000 --do-create-db=false --file "$LP" 2>&1 | tail -2
echo "load s: $(echo "$(date +%s.%N)-$t0" | bc)"
prev=0; same=0
for _ in $(seq 1 60); do
  sleep 10; cur=$(du -sb "$D/data" | cut -f1); echo "$(date +%T) $cur"
  if [ "$cur" = "$prev" ]; then same=$((same+1)); [ $same -ge 3 ] && break; else same=0; fi; prev=$cur
done
kill $PID; wait $PID || true
du -sb "$D/data"; find "$D/data" -type f -printf '%s %p\n' | sort -n | tail -8
