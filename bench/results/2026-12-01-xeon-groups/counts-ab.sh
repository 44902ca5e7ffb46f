#!/bin/bash
# counts-ab.sh A B DATA [PAIRS]: counts-settled.sh with binary A, then B, PAIRS times (3 by default), on fresh
# copies of the settled data directory DATA, each printing its counts under its binary's name.
A=$1; B=$2; DATA=$3; PAIRS=${4:-3}
here=$(dirname "$0")
for i in $(seq "$PAIRS"); do
  for bin in "$A" "$B"; do
    echo "== $(basename "$bin") round $i"
    bash "$here/counts-settled.sh" "$bin" "$DATA" 5
  done
done
