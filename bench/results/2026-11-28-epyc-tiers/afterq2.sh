# Sourced by settled.sh (AFTER_SETTLED) with PORT and CACHE set: five query types, then the segment files.
for t in high-cpu-1 lastpoint cpu-max-all-8 high-cpu-all single-groupby-1-1-1; do
  m=$($HOME/.cache/sundial/tsbs/bin/tsbs_run_queries_influx --urls=http://127.0.0.1:$PORT --db-name=benchmark --workers=1 --print-interval=0 --file=$HOME/.cache/sundial/tsbs/queries/$t-s4000-2016-01-01T000000Z-2016-01-01T120001Z-seed123-n20.gob 2>&1 | grep -A1 "^all queries" | tail -1)
  echo "  $t: $m"
done
ls -la $CACHE/scratch/loadtest/*/* 2>/dev/null | grep seg
