#!/bin/bash
# count-ab.sh A B FILE [PAIRS]: loads FILE with binary A, then B, PAIRS times (2 by default), each with
# ../2026-11-28-epyc-hotquick/settled.sh (until a count sees every row, then until the data settles:
# memtables flushed, compaction idle), and then times five counts (`SELECT count(usage_user) FROM cpu`)
# back to back on the settled data, with the server's CPU seconds over them.
A=$1; B=$2; F=$3; PAIRS=${4:-2}
here=$(dirname "$0")
export AFTER_SETTLED='c0=$(awk "{print \$14+\$15}" /proc/$SP/stat); for i in 1 2 3 4 5; do a=$(date +%s.%N); n=$(row_count $PORT); b=$(date +%s.%N); echo "count $n took $(echo "$b - $a" | bc | cut -c1-5) s"; done; echo "server cpu over the five counts $(awk -v c=$c0 "{printf \"%.2f\", (\$14+\$15-c)/100}" /proc/$SP/stat) s"'
for i in $(seq "$PAIRS"); do
  for bin in "$A" "$B"; do
    echo "== $(basename "$bin") round $i"
    bash "$here/../2026-11-28-epyc-hotquick/settled.sh" "$bin" "$F" 2>&1 | grep -E "^committed|^settled|^count|over the five"
  done
done
