#!/bin/bash
# Every-peer full run of 2026-11-29 (Xeon), in three invocations on one results directory.
cd /work/main
export SUNDIAL_BIN=/root/.cache/sundial/compare-bin/sundial-5256ec7
R=bench/results/2026-11-29-xeon-full
echo "== invocation 1 $(date -u +%H:%M:%S)"
bench/compare --profile full --scenarios 1,2,3 --peers sundial,questdb,victoriametrics,clickhouse,postgres \
  --data-cache-max-gb 8 --step-timeout 900 --query-timeout 120 --resume --results-dir $R
echo "== invocation 1 exit $? $(date -u +%H:%M:%S)"
echo "== invocation 2 $(date -u +%H:%M:%S)"
bench/compare --profile full --scenarios 4,5 --peers sundial,questdb,clickhouse \
  --data-cache-max-gb 8 --step-timeout 900 --query-timeout 120 --resume --results-dir $R
echo "== invocation 2 exit $? $(date -u +%H:%M:%S)"
echo "== invocation 3 $(date -u +%H:%M:%S)"
bench/compare --profile full --scenarios 1,3,4,2 --peers influxdb,postgres,victoriametrics \
  --data-cache-max-gb 8 --step-timeout 600 --query-timeout 120 --resume --results-dir $R
echo "== invocation 3 exit $? $(date -u +%H:%M:%S)"
#!/bin/bash
# Invocations 2-4 of the every-peer full run of 2026-11-29 (Xeon), after invocation 1 (pid $1) ends.
cd /work/main
while kill -0 $1 2>/dev/null; do sleep 5; done
echo "== invocation 1 ended $(date -u +%H:%M:%S)"
export SUNDIAL_BIN=/root/.cache/sundial/compare-bin/sundial-5256ec7
R=bench/results/2026-11-29-xeon-full
echo "== invocation 2 $(date -u +%H:%M:%S)"
bench/compare --profile full --scenarios 4,5 --peers sundial,questdb,clickhouse \
  --data-cache-max-gb 8 --step-timeout 900 --query-timeout 120 --resume --results-dir $R
echo "== invocation 2 exit $? $(date -u +%H:%M:%S)"
echo "== invocation 3 $(date -u +%H:%M:%S)"
bench/compare --profile full --scenarios 1,3,4 --peers influxdb,postgres,victoriametrics \
  --data-cache-max-gb 8 --step-timeout 600 --query-timeout 120 --resume --results-dir $R
echo "== invocation 3 exit $? $(date -u +%H:%M:%S)"
echo "== invocation 4 $(date -u +%H:%M:%S)"
bench/compare --profile full --scenarios 2 --peers influxdb \
  --data-cache-max-gb 8 --step-timeout 600 --query-timeout 120 --resume --results-dir $R
echo "== invocation 4 exit $? $(date -u +%H:%M:%S)"
