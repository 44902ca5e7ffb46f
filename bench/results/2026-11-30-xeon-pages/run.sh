#!/bin/bash
# Scenarios 1 and 2 (full profile) with Sundial at c5ff4d0 (pages decoded by reads of hours kept) and the
# peers best in the earlier runs on some figure of those scenarios (QuestDB, VictoriaMetrics), side by
# side in one invocation.
cd /work/main
export SUNDIAL_BIN=/root/.cache/sundial/compare-bin/sundial-pages
R=bench/results/2026-11-30-xeon-pages
echo "== start $(date -u +%H:%M:%S)"
bench/compare --profile full --scenarios 1,2 --peers sundial,questdb,victoriametrics \
  --data-cache-max-gb 8 --step-timeout 900 --query-timeout 120 --resume --results-dir $R/compare-s12
echo "== exit $? $(date -u +%H:%M:%S)"
