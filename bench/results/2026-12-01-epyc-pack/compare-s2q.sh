#!/bin/bash
# Scenario 2 (full profile) with queries, f872cd6's binary against QuestDB and VictoriaMetrics, one load each, with
# bench/compare as checked out: b2b4cef for this directory's compare-s2q (8-worker runs sized), d0aaf24 for
# compare-s2r (every run sized; compare-s2r.sh sets OUT).
cd /work/main
OUT=${OUT:-bench/results/2026-12-01-epyc-pack/compare-s2q}
echo "== start $(date -u +%H:%M:%S)"
SUNDIAL_BIN=/root/.cache/sundial/compare-bin/sundial-f872cd6 bench/compare --profile full --scenarios 2 \
  --peers sundial,questdb,victoriametrics --data-cache-max-gb 8 --step-timeout 900 --query-timeout 120 --resume \
  --results-dir $OUT
echo "== exit $? $(date -u +%H:%M:%S)"
