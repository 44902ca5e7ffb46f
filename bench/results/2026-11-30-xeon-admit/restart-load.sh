#!/bin/bash
# restart-load.sh BIN FILE1 FILE2: loads FILE1 into a fresh server, stops it (a clean stop), starts the
# same binary again on that data directory (the cache of series keys empty, every series in the catalog)
# and loads FILE2, printing for that second load the time until a count sees every row, the server's CPU
# then, and what /debug/vars says about the key probe. FILE2 should hold later rows of FILE1's series.
BIN=$1; F1=$2; F2=$3
. "$(dirname "$0")/../2026-11-23-vm/serve.sh"
PORT=18767
start_load_test "$BIN" $PORT > /dev/null || exit 1
load_influx $PORT ${TMPDIR:-/tmp}/restart-load1.log "$F1"
N1=$(wc -l < "$F1")
wait_for_rows $PORT $N1
stop_sundial
start_sundial "$BIN" "$CACHE/scratch/loadtest" $PORT ${TMPDIR:-/tmp}/restart-server2.log --compact-full-write-cold-secs 20 || exit 1
cpu() { awk '{printf "%.2f", ($14+$15)/100}' /proc/$SP/stat; }
C0=$(cpu)
T0=$(date +%s.%N)
load_influx $PORT ${TMPDIR:-/tmp}/restart-load2.log "$F2"
N2=$(wc -l < "$F2")
wait_for_rows $PORT $((N1 + N2))
T2=$(date +%s.%N)
echo "$(basename "$BIN"): second load after a restart: committed $(echo "$T2 - $T0" | bc) s = $(echo "$N2/($T2-$T0)" | bc) rows/s, server cpu $(echo "$(cpu) - $C0" | bc) s"
stop_sundial
