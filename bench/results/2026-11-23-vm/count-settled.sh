#!/bin/bash
# Times `SELECT count(usage_user) FROM cpu` three times on a copy of an existing data directory (one loaded
# and settled beforehand, e.g. with count-poll.sh's server left running a minute), so that two binaries
# read the very same files. Prints each query's wall time and answer.
#
#   bash bench/results/2026-11-23-vm/count-settled.sh BIN DATA_DIR [SCRATCH]
set -euo pipefail
BIN=$1 SRC=$2 W=${3:-/tmp/count-settled} PORT=18097
. "$(dirname "$0")/serve.sh"
rm -rf "$W"; mkdir -p "$W"; cp -r "$SRC" "$W/data"
trap 'stop_sundial; rm -rf "$W"' EXIT
start_sundial "$BIN" "$W/data" $PORT "$W/server.log"
sleep 3
for _ in 1 2 3; do
    s=$(date +%s.%N)
    out=$(curl -s -XPOST "127.0.0.1:$PORT/query?db=benchmark" --data-urlencode 'q=SELECT count(usage_user) FROM cpu')
    echo "$(echo "$(date +%s.%N) - $s" | bc) s  $out"
done
