#!/bin/bash
# qab.sh DATA SCALE BIN... : mean ms per query type for each binary (1 worker), alternating
DATA=$1; SC=$2; shift 2
for q in ${QDIR:-~/.cache/sundial/tsbs/queries}/*-s$SC-*-n20.gob; do
  n=$(basename $q | sed "s/-s$SC-.*//")
  line="$n"
  for b in "$@"; do
    m=$(bash "$(dirname "$0")/runq.sh" $b $DATA $q 2>&1 | grep -m1 "mean:" | sed 's/.*mean: *\([0-9.]*\)ms.*/\1/')
    line="$line $m"
  done
  echo $line
done
