#!/bin/bash
# qab.sh A B TYPE WORKERS N ROUNDS: qrun.sh with binaries sundial-A and sundial-B (~/.cache/sundial/compare-bin)
# in turn, ROUNDS times each, VARS=1 (the decoded-page cache's counters after each run).
# WARM: queries run first to warm the server (qrun.sh; default 200).
D=$(dirname "$0")
for r in $(seq $6); do
  for b in $1 $2; do
    echo "== $b round $r"
    VARS=1 $D/qrun.sh ~/.cache/sundial/compare-bin/sundial-$b $3 $4 $5 2>&1 | grep -E "^min|server cpu|client cpu|hits" | sort -u
  done
done
