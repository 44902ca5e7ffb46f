#!/bin/bash
# Ingest of scenarios 4 and 5 of the full profile, Sundial (3467399) against QuestDB, each database loaded three
# times per scenario on fresh data directories (`--load-runs 3`), as ../2026-11-30-xeon-runs3/fullrun.sh ran
# them with e6ba8bd; queries skipped. SUNDIAL_BIN and R (the results directory) default to this run's; other
# runs of the same comparison set them (../2026-11-30-xeon-admit/compare-s45.sh).
cd /work/main
export SUNDIAL_BIN=${SUNDIAL_BIN:-/root/.cache/sundial/compare-bin/sundial-3467399}
R=${R:-bench/results/2026-11-30-xeon-unlocked/compare-s45}
echo "== start $(date -u +%H:%M:%S)"
bench/compare --profile full --scenarios 4,5 --peers sundial,questdb --skip-queries --load-runs 3 \
  --data-cache-max-gb 8 --step-timeout 900 --resume --results-dir $R
echo "== exit $? $(date -u +%H:%M:%S)"
