import sys, collections
# shares.py FILE THREADPREFIX SYM...: per symbol, the share of THREADPREFIX's samples with it on the stack
samples=[];cur=None;comm=None
for line in open(sys.argv[1]):
    line=line.rstrip('\n')
    if not line.strip():
        if cur is not None: samples.append((comm,cur)); cur=None
        continue
    if not line.startswith('\t'):
        comm=line.split()[0]; cur=[]; continue
    p=line.strip().split(None,1)
    if len(p)==2: cur.append(p[1])
if cur is not None: samples.append((comm,cur))
th=sys.argv[2]
ss=[s for c,s in samples if c.startswith(th)]
print(f"{sys.argv[1]}: {len(ss)} of {len(samples)} samples in {th}*")
for sym in sys.argv[3:]:
    n=sum(1 for s in ss if any(sym in f for f in s))
    print(f"  {100*n/len(ss):5.1f}%  {sym}")
