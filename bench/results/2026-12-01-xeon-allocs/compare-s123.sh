#!/bin/bash
# Ingest of scenarios 1 to 3 (full profile, three loads each per database) with f1f2eaa against QuestDB, the
# best peer at ingest in every scenario of the runs before; queries skipped. With compare-s45.sh beside it,
# the five scenarios' ingest at one commit on one day.
cd /work/main
export SUNDIAL_BIN=/root/.cache/sundial/compare-bin/sundial-f1f2eaa
R=bench/results/2026-12-01-xeon-allocs/compare-s123
echo "== start $(date -u +%H:%M:%S)"
bench/compare --profile full --scenarios 1,2,3 --peers sundial,questdb --skip-queries --load-runs 3 \
  --data-cache-max-gb 8 --step-timeout 900 --resume --results-dir $R
echo "== exit $? $(date -u +%H:%M:%S)"
