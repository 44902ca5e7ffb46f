#!/bin/bash
# Scenario 2 (full profile: 4,000 hosts x 12 h) with queries, 0a41ebc's binary (decoded-pages cache sized by
# memory) against QuestDB and VictoriaMetrics, one load each, every query run sized (bench/compare at 0a41ebc).
cd /work/main
OUT=${OUT:-bench/results/2026-12-01-xeon-pagecap/compare-s2}
echo "== start $(date -u +%H:%M:%S)"
SUNDIAL_BIN=/root/.cache/sundial/compare-bin/sundial-0a41ebc bench/compare --profile full --scenarios 2 \
  --peers sundial,questdb,victoriametrics --data-cache-max-gb 8 --step-timeout 900 --query-timeout 120 --resume \
  --results-dir $OUT
echo "== exit $? $(date -u +%H:%M:%S)"
