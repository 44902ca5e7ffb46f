# serve-s2.sh [BIN]: loads TSBS's 4,000-host, 12-hour influx file into $CACHE/scratch/q2 and leaves the server running (pid in /tmp/q2.pid); add --compact-full-write-cold-secs 20 to settle it into one file, as qab.sh serves it
set -e
source "$(dirname "$0")/../../2026-11-23-vm/serve.sh"
BIN=${1:-$HOME/.cache/sundial/compare-bin/sundial-hotquick2}
rm -rf $CACHE/scratch/q2 && mkdir -p $CACHE/scratch/q2
start_sundial $BIN $CACHE/scratch/q2 18086 /tmp/q2-server.log
create_benchmark_db 18086
time load_influx 18086 /tmp/q2-load.log $CACHE/tsbs/data/cpu-only-s4000-2016-01-01T000000Z-2016-01-01T120000Z-seed123.influx.lp
wait_for_rows 18086 17280000
echo loaded; echo $SP > /tmp/q2.pid
