#!/bin/bash
# Scenarios 1 and 2 (full profile) with Sundial at 6caafc8 (the body copied as it comes) and the peers best
# in 2026-11-29-xeon-full on some figure of those scenarios (QuestDB, VictoriaMetrics), side by side in one
# invocation; then the loads again (Sundial and QuestDB, no queries) into a directory of their own.
cd /work/main
export SUNDIAL_BIN=/root/.cache/sundial/compare-bin/sundial-ingest
R=bench/results/2026-11-29-xeon-body
echo "== start $(date -u +%H:%M:%S)"
bench/compare --profile full --scenarios 1,2 --peers sundial,questdb,victoriametrics \
  --data-cache-max-gb 8 --step-timeout 900 --query-timeout 120 --resume --results-dir $R/compare-s12
echo "== exit $? $(date -u +%H:%M:%S)"
echo "== again $(date -u +%H:%M:%S)"
bench/compare --profile full --scenarios 1,2 --peers sundial,questdb --skip-queries \
  --data-cache-max-gb 8 --step-timeout 900 --resume --results-dir $R/ingest-again
echo "== exit $? $(date -u +%H:%M:%S)"
# Then scenario 5 (10 M devices), the loads only, Sundial and QuestDB (its best peer in every earlier run):
echo "== s5 $(date -u +%H:%M:%S)"
bench/compare --profile full --scenarios 5 --peers sundial,questdb --skip-queries \
  --data-cache-max-gb 8 --step-timeout 900 --resume --results-dir $R/compare-s5
echo "== exit $? $(date -u +%H:%M:%S)"
# Then scenarios 3 and 4 (100 K and 1 M devices), the loads only, Sundial and QuestDB:
echo "== s34 $(date -u +%H:%M:%S)"
bench/compare --profile full --scenarios 3,4 --peers sundial,questdb --skip-queries \
  --data-cache-max-gb 8 --step-timeout 900 --resume --results-dir $R/compare-s34
echo "== exit $? $(date -u +%H:%M:%S)"
