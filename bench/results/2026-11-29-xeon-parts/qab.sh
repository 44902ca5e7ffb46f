#!/bin/bash
# qab.sh ROUNDS DATA_DIR SCALE QUERY_TYPE BIN... : ../2026-11-29-xeon-runchunks/qab.sh for either query
# scenario, SCALE 100 (TSBS cpu at 100 hosts × 4 days, bench/compare's scenario 1 file) or 4000 (4,000
# hosts × 12 h, scenario 2), with each line's min and max left out: for each round, for each binary in
# turn, `sundial serve` on a copy of DATA_DIR (settled), the 20-query file at 1 worker twice, and the
# second run's latencies, the server's CPU seconds and minor faults over it, and its peak RSS.
ROUNDS=$1; DATA=$2; SC=$3; QT=$4; shift 4
SCALE=$SC bash "$(dirname "$0")/../2026-11-29-xeon-runchunks/qab.sh" "$ROUNDS" "$DATA" "$QT" "$@" |
  sed 's/min:.*med/med/; s/max:.*count: 20//'
