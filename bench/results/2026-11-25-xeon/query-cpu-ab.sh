#!/bin/bash
# query-cpu-ab.sh N "QUERY" BIN=DATA_DIR ...: per binary (each on a fresh copy of its data directory), the mean wall ms and
# the server's CPU ms (utime + stime from /proc) per query over N keep-alive POSTs of QUERY, after 20 warm-up ones.
# CPU per query moves far less than wall time on this shared machine. Alternate binaries to see the spread.
set -u
N=$1 Q=$2; shift 2
. "$(dirname "$0")/../2026-11-23-vm/serve.sh"
PORT=18131 W=/tmp/qcpu
for PAIR in "$@"; do
  BIN=${PAIR%%=*} SRC=${PAIR#*=}
  rm -rf $W; mkdir -p $W; cp -r "$SRC" $W/data
  start_sundial "$BIN" $W/data $PORT $W/server.log; sleep 2
  python3 - "$PORT" "$N" "$Q" "$SP" "$(basename $BIN)" <<'P'
import http.client, sys, time, urllib.parse, os
port,n,q,pid,name=int(sys.argv[1]),int(sys.argv[2]),sys.argv[3],sys.argv[4],sys.argv[5]
c=http.client.HTTPConnection('127.0.0.1',port)
body=urllib.parse.urlencode({'q':q,'db':'benchmark'})
def one():
    c.request('POST','/query?db=benchmark',body,{'Content-Type':'application/x-www-form-urlencoded'}); r=c.getresponse(); r.read()
def cpu():
    f=open(f'/proc/{pid}/stat').read().rsplit(')',1)[1].split(); return (int(f[11])+int(f[12]))*1000/os.sysconf('SC_CLK_TCK')
for _ in range(20): one()
c0=cpu(); t=time.perf_counter()
for _ in range(n): one()
dt=(time.perf_counter()-t)/n*1e3; dc=(cpu()-c0)/n
print(f"{name:18s} wall {dt:8.2f} ms  server cpu {dc:8.2f} ms/query")
P
  stop_sundial
done
rm -rf $W
