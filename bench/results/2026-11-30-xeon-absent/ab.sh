#!/bin/bash
# ab.sh A B FILE [PAIRS]: loads FILE with binary A, then B, PAIRS times (3 by default), each with
# ../2026-11-28-epyc-hotquick/settled.sh (THREADS=1 SETTLE=0: until a count sees every row, and each
# kind of server thread's CPU then), printing each load's figures under its binary's name.
A=$1; B=$2; F=$3; PAIRS=${4:-3}
here=$(dirname "$0")
for i in $(seq "$PAIRS"); do
  for bin in "$A" "$B"; do
    echo "== $(basename "$bin") round $i"
    THREADS=1 SETTLE=0 bash "$here/../2026-11-28-epyc-hotquick/settled.sh" "$bin" "$F" 2>&1 | grep -E "^loaded .* rows|sundial-flush|^committed"
  done
done
