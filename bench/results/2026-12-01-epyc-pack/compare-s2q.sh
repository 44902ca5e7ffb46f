#!/bin/bash
# Scenario 2 (full profile) with queries, f872cd6's binary with bench/compare at b2b4cef, which sizes the 8-worker
# runs (--query-run-seconds 5, the full profile's), against QuestDB and VictoriaMetrics, one load each.
cd /work/main
echo "== start $(date -u +%H:%M:%S)"
SUNDIAL_BIN=/root/.cache/sundial/compare-bin/sundial-f872cd6 bench/compare --profile full --scenarios 2 \
  --peers sundial,questdb,victoriametrics --data-cache-max-gb 8 --step-timeout 900 --query-timeout 120 --resume \
  --results-dir bench/results/2026-12-01-epyc-pack/compare-s2q
echo "== exit $? $(date -u +%H:%M:%S)"
