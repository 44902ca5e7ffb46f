#!/bin/bash
# Ingest of the five scenarios of the full profile, Sundial (e6ba8bd, the code of 41830c9) against QuestDB
# (the best peer at committed ingest in every scenario of ../2026-11-30-xeon-full2 and ../2026-11-29-xeon-full),
# each database loaded three times per scenario on fresh data directories (`--load-runs 3`, commit 53fbc34),
# queries skipped (those of ../2026-11-30-xeon-full2 stand).
cd /work/main
export SUNDIAL_BIN=/root/.cache/sundial/compare-bin/sundial-e6ba8bd
R=bench/results/2026-11-30-xeon-runs3
echo "== start $(date -u +%H:%M:%S)"
bench/compare --profile full --scenarios 1,2,3,4,5 --peers sundial,questdb --skip-queries --load-runs 3 \
  --data-cache-max-gb 8 --step-timeout 900 --resume --results-dir $R
echo "== exit $? $(date -u +%H:%M:%S)"
