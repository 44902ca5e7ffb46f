import collections,sys
# cmp.py A B SYM...: samples with each symbol on the stack in profile A and in B (perf script text, prof.sh).
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
pats=sys.argv[3:]
A=load(sys.argv[1]);B=load(sys.argv[2])
print("total",len(A),len(B))
for p in pats:
    a=sum(1 for c,s in A if any(p in f for f in s)); b=sum(1 for c,s in B if any(p in f for f in s))
    print(f"{p:45s} {a:6d} {b:6d} {b-a:+6d}")
