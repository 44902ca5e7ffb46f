#!/bin/bash
# Scenarios 1 and 2 (full profile) with Sundial at 4cbe43b and the peers that were best in
# 2026-11-29-xeon-full on some figure of those scenarios (QuestDB: ingest, high-cpu-all, lastpoint;
# VictoriaMetrics: disk, cpu-max-all-8, double-groupby-1), side by side in one invocation.
cd /work/main
export SUNDIAL_BIN=/root/.cache/sundial/compare-bin/sundial-4cbe43b
R=bench/results/2026-11-29-xeon-s12
echo "== start $(date -u +%H:%M:%S)"
bench/compare --profile full --scenarios 1,2 --peers sundial,questdb,victoriametrics \
  --data-cache-max-gb 8 --step-timeout 900 --query-timeout 120 --resume --results-dir $R
echo "== exit $? $(date -u +%H:%M:%S)"
# Then, the loads again (no queries), Sundial and QuestDB, in a directory of their own:
echo "== again $(date -u +%H:%M:%S)"
bench/compare --profile full --scenarios 1,2 --peers sundial,questdb --skip-queries \
  --data-cache-max-gb 8 --step-timeout 900 --resume --results-dir $R/ingest-again
echo "== exit $? $(date -u +%H:%M:%S)"
