#!/bin/bash
# sleeps.sh BIN [FILE]: one load as traced.sh's, under `perf record -a -e sched:sched_switch --call-graph dwarf`:
CACHE=${SUNDIAL_CACHE:-$HOME/.cache/sundial}
BIN=$1; F=${2:-$CACHE/scratch/s4-round1.lp}
D=$(dirname "$0")
PERFTARGET="-a" PERF=1 PERFARGS="-e sched:sched_switch --call-graph dwarf,8192" THREADS=1 SETTLE=0 bash "$D/../2026-11-28-epyc-hotquick/settled.sh" $BIN $F 2>&1 | tail -1
perf script -i ${TMPDIR:-/tmp}/perf-load.data -F comm,tid,cpu,time,event,trace,ip,sym --no-inline 2>/dev/null > ${TMPDIR:-/tmp}/sched.txt
python3 "$D/sleeps.py" ${TMPDIR:-/tmp}/sched.txt | cut -c1-220 | head -10
