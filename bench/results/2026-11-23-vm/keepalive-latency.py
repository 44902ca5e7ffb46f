import http.client, sys, time, urllib.parse
# keepalive-latency.py PORT N QUERY...: mean latency of N keep-alive POSTs of each InfluxQL query (after 50 warm-up ones)
port=int(sys.argv[1]); n=int(sys.argv[2]); qs=sys.argv[3:]
c=http.client.HTTPConnection('127.0.0.1',port)
for q in qs:
    body=urllib.parse.urlencode({'q':q,'db':'benchmark'})
    def one():
        c.request('POST','/query?db=benchmark',body,{'Content-Type':'application/x-www-form-urlencoded'})
        r=c.getresponse(); r.read()
    for _ in range(50): one()
    t=time.perf_counter()
    for _ in range(n): one()
    dt=(time.perf_counter()-t)/n
    print(f"{dt*1e6:8.1f} us  {q[:90]}")
