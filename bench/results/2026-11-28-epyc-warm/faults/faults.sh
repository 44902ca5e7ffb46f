# faults.sh BIN: loads TSBS's 1,000,000-host, 30 s influx file (scenario 4) into a fresh server and prints, once every row is committed, the page faults, CPU, peak RSS and anonymous huge pages of the server (MIMALLOC_ALLOW_THP=0 in the environment turns mimalloc's MADV_HUGEPAGE off)
source "$(dirname "$0")/../../2026-11-23-vm/serve.sh"
F=$CACHE/tsbs/data/cpu-only-s1000000-2016-01-01T000000Z-2016-01-01T000030Z-seed123.influx.lp
start_load_test $1 18767
"$TSBS_BIN/tsbs_load_influx" --urls=http://127.0.0.1:18767 --db-name=benchmark --workers=2 --batch-size=10000 --gzip=false --do-create-db=false --reporting-period=0s --file=$F > /dev/null 2>&1
wait_for_rows 18767 3000000
awk '{print "minflt", $10, "cpu", ($14+$15)/100}' /proc/$SP/stat; grep -E "VmHWM|AnonHugePages|RssAnon" /proc/$SP/status; grep AnonHugePages /proc/$SP/smaps_rollup
stop_sundial
