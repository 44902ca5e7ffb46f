#!/bin/bash
# ab.sh ROUNDS FILE BIN...: FILE loaded into each binary in turn, ROUNDS times, up to the count that sees every
# row: committed time, server CPU, the write path's CPU (tokio-rt-worker), minor faults.
R=$1; F=$2; shift 2
for r in $(seq $R); do
  for BIN in "$@"; do
    echo "round $r $(basename $BIN): $(bash "$(dirname "$0")/../2026-11-29-xeon-densepos/committed-threads.sh" $BIN $F 2>&1 | grep -oE 'tokio-rt-worker=[0-9.]+|committed [0-9.]+ s|server cpu [0-9.]+ s|minor faults [0-9]+' | tr '\n' ' ')"
  done
done
