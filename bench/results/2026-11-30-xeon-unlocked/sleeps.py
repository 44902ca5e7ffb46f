import sys,re,collections
evs=[]; cur=None
hdr=re.compile(r'^\s*(\S.*?)\s+(\d+)\s+\[(\d+)\]\s+([\d.]+):\s+sched:sched_switch:\s+prev_comm=(.*?) prev_pid=(\d+) prev_prio=\d+ prev_state=(\S+) ==> next_comm=(.*?) next_pid=(\d+)')
for line in open(sys.argv[1]):
    m=hdr.match(line)
    if m:
        cur=dict(cpu=int(m.group(3)),t=float(m.group(4)),prev_comm=m.group(5),prev=int(m.group(6)),state=m.group(7),next_comm=m.group(8),nxt=int(m.group(9)),stack=[])
        evs.append(cur); continue
    if cur is not None and line.strip():
        parts=line.strip().split(None,1)
        if len(parts)>1: cur['stack'].append(re.sub(r'\+0x[0-9a-f]+$','',parts[1]))
out_at={}; sleep_by=collections.Counter(); cnt=collections.Counter()
def short(s):
    for _ in range(3): s=re.sub(r'<[^<>]*>','',s)
    return s
for e in evs:
    if e['prev_comm']=='tokio-rt-worker' and e['state'] in ('S','D'):
        st=[short(s) for s in e['stack']]
        if not any('write_lines' in s for s in st):
            key='(not in write_lines) '+' < '.join(s for s in st if 'tokio' in s or 'std' in s)[:120]
            key='(not in write_lines)'
        else:
            user=[s for s in st if not s.startswith(('__','schedule','futex','do_','entry_','syscall','[unknown]','irq','asm_','exc_','handle_mm','rwsem','down_','lock_mm'))]
            kern=[s for s in st if s.startswith(('rwsem','down_','lock_mm','exc_page','do_user_addr'))]
            key=' < '.join(user[:6])+ ('  [K:'+','.join(kern[:2])+']' if kern else '')
        out_at[e['prev']]=(e['t'],key)
    if e['nxt'] in out_at:
        t,key=out_at.pop(e['nxt'])
        sleep_by[key]+=e['t']-t; cnt[key]+=1
for k,v in sleep_by.most_common(25): print('%7.3f s %6d  %s'%(v,cnt[k],k[:260]))
