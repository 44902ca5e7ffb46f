#!/bin/bash
# query-ab.sh with each type run RUNS times (default 7) per server start, printing the minimum / median of
# the runs' means; WORKERS (default 1) as there.
#
#   bash bench/results/2026-11-23-vm/query-ab7.sh SUFFIX "TYPES" BIN=DATA_DIR ...      # SUFFIX: s100 or s4000
RUNS=${RUNS:-7} exec bash "$(dirname "$0")/query-ab.sh" "$@"
