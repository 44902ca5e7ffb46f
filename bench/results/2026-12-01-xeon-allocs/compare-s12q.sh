#!/bin/bash
# Scenarios 1 and 2 (full profile) with queries, f1f2eaa against the peers best on some figure of those
# scenarios in the runs before (QuestDB, VictoriaMetrics), one load each, as ../2026-11-30-xeon-wal2/run.sh.
cd /work/main
export SUNDIAL_BIN=/root/.cache/sundial/compare-bin/sundial-f1f2eaa
R=bench/results/2026-12-01-xeon-allocs
echo "== start $(date -u +%H:%M:%S)"
bench/compare --profile full --scenarios 1,2 --peers sundial,questdb,victoriametrics \
  --data-cache-max-gb 8 --step-timeout 900 --query-timeout 120 --resume --results-dir $R/compare-s12q
echo "== exit $? $(date -u +%H:%M:%S)"
