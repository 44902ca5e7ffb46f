# Sourced by this directory's scripts: a `sundial serve` on a scratch data directory, and TSBS's loader
# with bench/compare's settings. Not run on its own.

CACHE=${SUNDIAL_CACHE:-$HOME/.cache/sundial}
TSBS_BIN=$CACHE/tsbs/bin

# start_sundial BIN DATA_DIR PORT LOG [ARGS...]: starts the server (HTTP on PORT, PostgreSQL on a free port,
# idle memtables flushed after 10 s, ARGS appended), sets SP to its pid, and returns once /ping answers
# (up to 3 minutes: the start-up of a large data directory).
start_sundial() {
    local bin=$1 data=$2 port=$3 log=$4
    shift 4
    "$bin" serve --data-dir "$data" --http-addr "127.0.0.1:$port" --pg-addr 127.0.0.1:0 --flush-idle-secs 10 "$@" > "$log" 2>&1 &
    SP=$!
    for _ in $(seq 900); do
        curl -s -o /dev/null -w '%{http_code}' "127.0.0.1:$port/ping" | grep -q 204 && return 0
        sleep 0.2
    done
    echo "sundial did not answer /ping on port $port within 3 minutes; see $log" >&2
    return 1
}

# stop_sundial: stops the server start_sundial started (SIGTERM, a clean stop) and waits for it to exit.
stop_sundial() {
    kill "${SP:-}" 2>/dev/null || true
    wait "${SP:-}" 2>/dev/null || true
}

# start_load_test BIN PORT [ARGS...]: start_sundial on a fresh $CACHE/scratch/loadtest with the flags
# 2026-11-27-xeon/load-ab.sh uses (the newest partition merged 20 s after its last file, as bench/compare
# runs it), log in ${TMPDIR:-/tmp}/load-server.log, and the benchmark database created.
start_load_test() {
    local bin=$1 port=$2
    shift 2
    rm -rf "$CACHE/scratch/loadtest" && mkdir -p "$CACHE/scratch/loadtest" || return 1
    start_sundial "$bin" "$CACHE/scratch/loadtest" "$port" "${TMPDIR:-/tmp}/load-server.log" --compact-full-write-cold-secs 20 "$@" || return 1
    create_benchmark_db "$port"
}

# create_benchmark_db PORT: the database TSBS's tools use.
create_benchmark_db() {
    curl -s -XPOST "127.0.0.1:$1/query" --data-urlencode 'q=CREATE DATABASE benchmark' > /dev/null
}

# row_count PORT: what `SELECT count(usage_user) FROM cpu` in `benchmark` returns now (empty if nothing).
row_count() {
    curl -s -G "127.0.0.1:$1/query" --data-urlencode db=benchmark --data-urlencode 'q=SELECT count(usage_user) FROM cpu' |
        grep -o '"values":\[\[[^]]*' | grep -o '[0-9]*$'
}

# wait_for_rows PORT ROWS: returns once row_count sees ROWS (every row committed), polling every 50 ms.
wait_for_rows() {
    until [ "$(row_count "$1")" = "$2" ]; do sleep 0.05; done
}

# load_influx PORT LOG [FILE]: tsbs_load_influx into `benchmark` (2 workers, batches of 10,000 rows, as
# bench/compare runs it), from FILE or else from standard input; its output goes to LOG.
load_influx() {
    local port=$1 log=$2
    shift 2
    "$TSBS_BIN/tsbs_load_influx" --urls="http://127.0.0.1:$port" --db-name=benchmark --workers=2 --batch-size=10000 \
        --gzip=false --do-create-db=false ${1:+--file "$1"} > "$log" 2>&1
}
