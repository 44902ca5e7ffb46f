#!/usr/bin/env bash
# tsbs-ab.sh BIN_A BIN_B ROUNDS [QUERY_FILE]: both servers up at once on copies of scenario 2's settled data
# (~/.cache/sundial/scratch/q2), TSBS's own runner (1 worker, the compare's 20-query files) against each in
# turn, ROUNDS times; prints each run's mean and each server's CPU per query.
set -euo pipefail
A=$1 B=$2 ROUNDS=${3:-5}
Q=${4:-$HOME/.cache/sundial/tsbs/queries/lastpoint-s4000-2016-01-01T000000Z-2016-01-01T120001Z-seed123-n20.gob}
S=$HOME/.cache/sundial/scratch
RUN=$HOME/.cache/sundial/tsbs/bin/tsbs_run_queries_influx
pids=()
for i in 0 1; do
  rm -rf "$S/tab$i"; cp -r "$S/q2" "$S/tab$i"
done
"$A" serve --data-dir "$S/tab0" --http-addr 127.0.0.1:18791 --pg-addr 127.0.0.1:0 >/tmp/tab0.log 2>&1 & pids+=($!)
"$B" serve --data-dir "$S/tab1" --http-addr 127.0.0.1:18792 --pg-addr 127.0.0.1:0 >/tmp/tab1.log 2>&1 & pids+=($!)
trap 'kill ${pids[*]} 2>/dev/null; wait 2>/dev/null' EXIT
for p in 18791 18792; do for _ in $(seq 100); do curl -sf http://127.0.0.1:$p/ping && break; sleep 0.1; done; done
cpu() { awk '{print $14+$15}' /proc/$1/stat; }
declare -A sum cpu0
for i in 0 1; do cpu0[$i]=$(cpu ${pids[$i]}); done
for r in $(seq "$ROUNDS"); do
  for i in 0 1; do
    port=$((18791 + i))
    out=$("$RUN" --file="$Q" --urls=http://127.0.0.1:$port --db-name=benchmark --workers=1 --print-interval=1000 2>&1)
    m=$(echo "$out" | grep "mean:" | head -1 | sed 's/.*mean: *\([0-9.]*\)ms.*/\1/')
    echo "round $r $(basename $([ $i = 0 ] && echo "$A" || echo "$B")): mean $m ms"
  done
done
for i in 0 1; do
  n=$((ROUNDS * 20))
  echo "$(basename $([ $i = 0 ] && echo "$A" || echo "$B")): server CPU per query $(echo "($(cpu ${pids[$i]}) - ${cpu0[$i]}) * 10 / $n" | bc -l | cut -c1-5) ms (incl. the first queries after start)"
done
