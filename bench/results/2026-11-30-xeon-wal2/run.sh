#!/bin/bash
# Scenarios 1 and 2 (full profile) with Sundial at a08200e (few long series flushed at half the memtable
# budget; WAL rows of the previous row's shape) and the peers best in 2026-11-29-xeon-full on some figure of those scenarios (QuestDB,
# VictoriaMetrics), side by side in one invocation. SUNDIAL_BIN and OUT (the results directory) default to this
# run's; later runs of the same comparison set them (../2026-12-01-xeon-allocs/compare-s12q.sh).
cd /work/main
export SUNDIAL_BIN=${SUNDIAL_BIN:-/root/.cache/sundial/compare-bin/sundial-wal2}
OUT=${OUT:-bench/results/2026-11-30-xeon-wal2/compare-s12}
echo "== start $(date -u +%H:%M:%S)"
bench/compare --profile full --scenarios 1,2 --peers sundial,questdb,victoriametrics \
  --data-cache-max-gb 8 --step-timeout 900 --query-timeout 120 --resume --results-dir $OUT
echo "== exit $? $(date -u +%H:%M:%S)"
