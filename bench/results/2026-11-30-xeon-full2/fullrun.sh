#!/bin/bash
# The full profile with Sundial at e6ba8bd (decoded pages kept for reads of hours, WAL rows of the previous
# row's shape) on the slower Xeon of 2026-11-30, scenarios 3 to 5 first (their last side-by-side run is
# the oldest), then 1 and 2; the peers best in some figure of the every-peer run of 2026-11-29.
cd /work/main
export SUNDIAL_BIN=/root/.cache/sundial/compare-bin/sundial-e6ba8bd
R=bench/results/2026-11-30-xeon-full2
echo "== invocation 1 $(date -u +%H:%M:%S)"
bench/compare --profile full --scenarios 3,4,5 --peers sundial,questdb,clickhouse \
  --data-cache-max-gb 8 --step-timeout 900 --query-timeout 120 --resume --results-dir $R
echo "== invocation 1 exit $? $(date -u +%H:%M:%S)"
echo "== invocation 2 $(date -u +%H:%M:%S)"
bench/compare --profile full --scenarios 1,2 --peers sundial,questdb,victoriametrics,clickhouse \
  --data-cache-max-gb 8 --step-timeout 900 --query-timeout 120 --resume --results-dir $R
echo "== invocation 2 exit $? $(date -u +%H:%M:%S)"
