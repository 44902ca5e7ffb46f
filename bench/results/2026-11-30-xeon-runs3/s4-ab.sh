#!/bin/bash
# s4-ab.sh ROUNDS BIN_A BIN_B: scenario 4's file (1 M hosts × 30 s) loaded into each binary in turn, ROUNDS
# times, up to the count that sees every row: committed time, server CPU, the write path's threads' CPU
# (`tokio-rt-worker`) and minor faults (../2026-11-29-xeon-densepos/committed-threads.sh).
R=$1; shift
F=${SUNDIAL_CACHE:-$HOME/.cache/sundial}/tsbs/data/cpu-only-s1000000-2016-01-01T000000Z-2016-01-01T000030Z-seed123.influx.lp
for r in $(seq $R); do
  for BIN in "$@"; do
    echo "round $r $(basename $BIN): $(bash "$(dirname "$0")/../2026-11-29-xeon-densepos/committed-threads.sh" $BIN $F 2>&1 | grep -oE 'tokio-rt-worker=[0-9.]+|committed [0-9.]+ s|server cpu [0-9.]+ s|minor faults [0-9]+' | tr '\n' ' ')"
  done
done
