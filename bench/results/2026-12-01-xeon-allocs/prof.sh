#!/bin/bash
# prof.sh NAME BIN: one scenario-5 load (../2026-11-28-epyc-hotquick/settled.sh, THREADS=1 SETTLE=0) under perf
# until committed; perf script into /tmp/an/NAME.txt, which profiles.py reads (cmp A B SYM..., alloc FILE...).
export TMPDIR=$HOME/.cache/sundial/scratch
F=$HOME/.cache/sundial/tsbs/data/cpu-only-s10000000-2016-01-01T000000Z-2016-01-01T000010Z-seed123.influx.lp
cd /work/main
THREADS=1 SETTLE=0 PERF=1 PERFARGS="-F 97 --call-graph dwarf,12288" bash bench/results/2026-11-28-epyc-hotquick/settled.sh $2 $F 2>&1 | grep -E "^loaded|sundial-flush|^committed"
perf script -i $TMPDIR/perf-load.data --no-inline -F comm,tid,ip,sym > /tmp/an/$1.txt 2>/dev/null
echo done $1
