import collections,sys
# alloc.py FILE...: per profile, the share of samples in the allocator (malloc, free, vector growth, drops) and the callers.
def load(f):
    samples=[];cur=None;comm=None
    for line in open(f):
        line=line.rstrip('\n')
        if not line.strip():
            if cur is not None: samples.append((comm,cur)); cur=None
            continue
        if not line.startswith('\t'):
            comm=line.split()[0]; cur=[]; continue
        p=line.strip().split(None,1)
        if len(p)==2: cur.append(p[1])
    return samples
for f in sys.argv[1:]:
    s=load(f); n=len(s)
    c=collections.Counter()
    tot=0
    for cm,st in s:
        idx=[i for i,fr in enumerate(st) if fr.startswith('mi_') or fr.startswith('_mi_') or 'finish_grow' in fr or 'grow_one' in fr or 'do_reserve_and_handle' in fr or 'drop_in_place' in fr]
        if not idx: continue
        tot+=1
        i=max(idx)
        caller=[fr for fr in st[i+1:] if not ('alloc::' in fr or 'core::' in fr or 'drop_in_place' in fr)]
        c[caller[0][:70] if caller else '?']+=1
    th=collections.Counter(cm[:12] for cm,_ in s)
    print(f, n, dict(th), f"alloc {100*tot/n:.2f}%")
    for k,v in c.most_common(10): print(f"   {100*v/n:5.2f}% {k}")
