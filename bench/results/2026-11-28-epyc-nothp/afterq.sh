for t in single-groupby-1-8-1 groupby-orderby-limit lastpoint double-groupby-all single-groupby-5-1-1; do
  m=$($HOME/.cache/sundial/tsbs/bin/tsbs_run_queries_influx --urls=http://127.0.0.1:$PORT --db-name=benchmark --workers=1 --print-interval=0 --file=$HOME/.cache/sundial/tsbs/queries/$t-s4000-2016-01-01T000000Z-2016-01-01T120001Z-seed123-n20.gob 2>&1 | grep -A1 "^all queries" | tail -1)
  echo "  $t: $m"
done
