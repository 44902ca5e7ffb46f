#!/bin/bash
# traced.sh BIN [FILE]: one load (up to the count that sees every row) of a binary built with
# http-trace.patch and engine-trace.py applied, SUNDIAL_TRACE_WRITES=1 set: per write request the body's read,
# the prelookup, the wait for write_lock, the resolve under it, the rest of the write, summed over the load.
# FILE defaults to the first round of scenario 4 (the first 1,000,000 lines of its file: every row a new series).
CACHE=${SUNDIAL_CACHE:-$HOME/.cache/sundial}
BIN=$1; F=${2:-$CACHE/scratch/s4-round1.lp}
[ -f "$F" ] || head -n 1000000 $CACHE/tsbs/data/cpu-only-s1000000-2016-01-01T000000Z-2016-01-01T000030Z-seed123.influx.lp > "$F"
SUNDIAL_TRACE_WRITES=1 THREADS=1 SETTLE=0 bash "$(dirname "$0")/../2026-11-28-epyc-hotquick/settled.sh" $BIN $F 2>&1 | tail -1
python3 - <<'PY'
import re
log = open('/tmp/load-server.log').read().splitlines()
rows = [dict((k, int(v)) for k, v in re.findall(r'(\w+)_us=(\d+)', l)) for l in log if 'ETRACE' in l]
w = [dict((k, int(v)) for k, v in re.findall(r'(\w+)_us=(\d+)', l)) for l in log if 'WTRACE' in l]
print(len(rows), 'writes, seconds summed:', ' '.join('%s %.3f' % (k, sum(r[k] for r in rows) / 1e6) for k in rows[0]),
      ' http:', ' '.join('%s %.3f' % (k, sum(r[k] for r in w) / 1e6) for k in ('body', 'work', 'total')))
PY
