# qab.sh BIN... : per binary in turn (twice round), the settled s2 data dir served, then double-groupby-1, lastpoint and double-groupby-5 run 4 times each (20 queries a run)
source "$(dirname "$0")/../../2026-11-23-vm/serve.sh"
cd $CACHE/tsbs
for round in 1 2; do
for BIN in "$@"; do
  start_sundial $BIN $CACHE/scratch/q2 18086 /tmp/qab-server.log --compact-full-write-cold-secs 20
  for f in double-groupby-1 lastpoint double-groupby-5; do
    for i in 1 2 3 4; do
      m=$(bin/tsbs_run_queries_influx --file queries/$f-s4000-2016-01-01T000000Z-2016-01-01T120001Z-seed123-n20.gob --urls http://127.0.0.1:18086 --workers 1 --print-interval 0 2>&1 | grep -A1 "all queries" | tail -1 | sed 's/.*med: *\([0-9.]*\)ms, mean: *\([0-9.]*\)ms.*/\1 \2/')
      echo "$(basename $BIN) $f run$i med/mean $m"
    done
  done
  stop_sundial
done
done
