import sys,re,collections
# parse events: header line then stack lines
evs=[]; cur=None
hdr=re.compile(r'^\s*(\S.*?)\s+(\d+)\s+\[(\d+)\]\s+([\d.]+):\s+sched:sched_switch:\s+prev_comm=(.*?) prev_pid=(\d+) prev_prio=\d+ prev_state=(\S+) ==> next_comm=(.*?) next_pid=(\d+)')
for line in open(sys.argv[1]):
    m=hdr.match(line)
    if m:
        cur=dict(cpu=int(m.group(3)),t=float(m.group(4)),prev_comm=m.group(5),prev=int(m.group(6)),state=m.group(7),next_comm=m.group(8),nxt=int(m.group(9)),stack=[])
        evs.append(cur); continue
    if cur is not None and line.strip():
        parts=line.strip().split(None,1)
        if len(parts)>1: cur['stack'].append(parts[1])
# idle accounting per cpu: time when swapper runs
t0=evs[0]['t']; t1=evs[-1]['t']
running={}  # cpu -> (pid, comm, since)
idle=collections.Counter(); busy=collections.Counter()
comm_of={}
out_at={}  # pid -> (t, reason)
sleep_by=collections.Counter()
for e in evs:
    c=e['cpu']
    if c in running:
        pid,comm,since=running[c]
        (idle if pid==0 else busy)[comm if pid else 'idle']+=e['t']-since
    running[c]=(e['nxt'],e['next_comm'],e['t'])
    # sleep reason of prev
    if e['prev_comm'] in ('tokio-rt-worker',) and e['state'] in ('S','D'):
        st=[s for s in e['stack'] if not s.startswith(('__schedule','schedule'))]
        reason=' < '.join(s.split('+')[0] for s in st[:4])
        out_at[e['prev']]=(e['t'],reason)
    if e['nxt'] in out_at:
        t,reason=out_at.pop(e['nxt'])
        sleep_by[reason]+=e['t']-t
span=t1-t0
print('span %.2f s, idle %.2f core-s'%(span,sum(idle.values())))
for k,v in busy.most_common(8): print('busy %-20s %.2f'%(k,v))
print('tokio-rt-worker sleeps by kernel stack:')
for k,v in sleep_by.most_common(15): print('%7.3f s  %s'%(v,k[:170]))
