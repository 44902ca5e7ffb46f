# qafter.sh: sourced by ../../2026-11-28-epyc-hotquick/settled.sh through AFTER_SETTLED (PORT, CACHE set): TSBS query files of
# the 4,000-host 12-hour data at 1 worker, lastpoint three times then single-groupby-1-1-1 and high-cpu-all; then the segment files.
Q=$HOME/.cache/sundial/tsbs/queries; RUN=$HOME/.cache/sundial/tsbs/bin/tsbs_run_queries_influx
for q in lastpoint lastpoint lastpoint single-groupby-1-1-1 high-cpu-all; do
  m=$($RUN --file=$Q/$q-s4000-2016-01-01T000000Z-2016-01-01T120001Z-seed123-n20.gob --urls=http://127.0.0.1:$PORT --db-name=benchmark --workers=1 --print-interval=0 2>&1 | grep -A1 "^$q\|Influx" | grep -o "mean: *[0-9.]*ms" | head -1)
  echo "  $q $m"
done
ls -la $CACHE/scratch/loadtest/ | head -3; find $CACHE/scratch/loadtest -name '*.seg' | xargs ls -la
