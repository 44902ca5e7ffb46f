#!/bin/bash
# load-ab.sh BIN_A BIN_B ROUNDS FILE...: each file loaded ROUNDS times by each binary, alternating A,B, with
# ../2026-11-28-epyc-hotquick/settled.sh's load and count (time until `count` sees every row, the server's
# CPU then, peak RSS, minor faults), without waiting for compaction to settle.
A=$1; B=$2; N=$3; shift 3
S=$(mktemp); sed -e '/^idle=0/,/^echo "settled/d' "$(dirname "$0")/../2026-11-28-epyc-hotquick/settled.sh" |
  sed "s|\"\$(dirname \"\$0\")/../2026-11-23-vm/serve.sh\"|$(cd "$(dirname "$0")/.." && pwd)/2026-11-23-vm/serve.sh|" > "$S"
for F in "$@"; do for i in $(seq "$N"); do for X in "$A" "$B"; do
  echo "$(basename "$F" | cut -d- -f3) $(basename "$X"): $(bash "$S" "$X" "$F" 2>&1 | grep committed)"
done; done; done
rm -f "$S"
