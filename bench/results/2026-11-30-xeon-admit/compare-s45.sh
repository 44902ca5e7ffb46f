#!/bin/bash
# Ingest of scenarios 4 and 5 of the full profile, Sundial (40a88ac: the key cache after a restart and its
# admission, flushed memtables freed by the flush thread) against QuestDB, three loads per database and
# scenario (`--load-runs 3`), as ../2026-11-30-xeon-unlocked/compare-s45.sh ran 3467399; queries skipped.
cd /work/main
export SUNDIAL_BIN=/root/.cache/sundial/compare-bin/sundial-40a88ac
R=bench/results/2026-11-30-xeon-admit/compare-s45
echo "== start $(date -u +%H:%M:%S)"
bench/compare --profile full --scenarios 4,5 --peers sundial,questdb --skip-queries --load-runs 3 \
  --data-cache-max-gb 8 --step-timeout 900 --resume --results-dir $R
echo "== exit $? $(date -u +%H:%M:%S)"
