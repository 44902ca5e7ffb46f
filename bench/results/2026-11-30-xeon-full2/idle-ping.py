# idle-ping.py PORT: /ping on one kept-alive connection to a running server, three times after each idle gap
# (0 to 1 s): the latency a request pays for waking the machine after the server and the client slept.
import http.client, time, sys
port=int(sys.argv[1])
c=http.client.HTTPConnection('127.0.0.1', port); c.connect()
def req():
    t=time.perf_counter(); c.request('GET', '/ping'); r=c.getresponse(); r.read(); return (time.perf_counter()-t)*1000
for _ in range(5): req()
for idle in [0, 0.001, 0.01, 0.1, 0.3, 1.0]:
    out=[]
    for _ in range(3):
        time.sleep(idle); out.append(req())
    print("idle %.3f s: /ping %s ms" % (idle, ' '.join('%.3f'%x for x in out)))
