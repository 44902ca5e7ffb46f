#!/usr/bin/env python3
"""ab2.py BIN_A BIN_B [N]: both servers at once on copies of the s2 data, queries alternated A,B,A,B (HTTP keep-alive, like TSBS)."""
import os, subprocess, sys, time, shutil, statistics, http.client, urllib.parse
bins = sys.argv[1:3]; n = int(sys.argv[3]) if len(sys.argv) > 3 else 300
q = os.environ.get("Q", 'SELECT * from cpu group by "hostname" order by time desc limit 1')
home = os.path.expanduser("~/.cache/sundial/scratch")
procs, conns = [], []
for i, b in enumerate(bins):
    d = f"{home}/ab{i}"
    shutil.rmtree(d, ignore_errors=True); shutil.copytree(f"{home}/" + os.environ.get("DATA", "q2"), d)
    port = 18780 + i
    p = subprocess.Popen([b, "serve", "--data-dir", d, "--http-addr", f"127.0.0.1:{port}", "--pg-addr", "127.0.0.1:0"], stdout=subprocess.DEVNULL, stderr=open(f"/tmp/ab{i}.log", "w"))
    procs.append(p)
    for _ in range(600):
        try:
            c = http.client.HTTPConnection("127.0.0.1", port); c.request("GET", "/ping"); c.getresponse().read(); break
        except Exception: time.sleep(0.1)
    conns.append(http.client.HTTPConnection("127.0.0.1", port))
path = "/query?" + urllib.parse.urlencode({"db": "benchmark", "q": q})
def one(i):
    t = time.perf_counter(); conns[i].request("GET", path); body = conns[i].getresponse().read(); return time.perf_counter() - t, len(body)
def cpu(p):
    f = open(f"/proc/{p.pid}/stat").read().split(); return (int(f[13]) + int(f[14])) / 100
for _ in range(30): one(0); one(1)
c0 = [cpu(p) for p in procs]
ts = [[], []]
for k in range(n):
    order = (0, 1) if k % 2 == 0 else (1, 0)
    for i in order:
        dt, ln = one(i); ts[i].append(dt * 1e3)
c1 = [cpu(p) for p in procs]
for i, b in enumerate(bins):
    x = sorted(ts[i])
    print(f"{os.path.basename(b):24s} mean {statistics.mean(x):.3f} ms  median {statistics.median(x):.3f}  p10 {x[len(x)//10]:.3f}  p90 {x[len(x)*9//10]:.3f}  cpu/query {(c1[i]-c0[i])*1e3/n:.2f} ms")
for p in procs: p.terminate()
for p in procs: p.wait()
