"""Two readings of `perf script` text (prof.sh's /tmp/an/NAME.txt):
  profiles.py cmp A B SYM...   samples with each symbol on the stack, in profile A and in profile B
  profiles.py alloc FILE...    per profile, the allocator's share of the samples (malloc, free, vectors
                               growing, drops) and the first caller outside it
The loader is ../2026-12-01-xeon-packlevel/profiles/shares.py's, which is a script, not a module."""
import collections
import sys


def load(f):
    samples = []
    cur = None
    comm = None
    for line in open(f):
        line = line.rstrip('\n')
        if not line.strip():
            if cur is not None:
                samples.append((comm, cur))
                cur = None
            continue
        if not line.startswith('\t'):
            comm = line.split()[0]
            cur = []
            continue
        p = line.strip().split(None, 1)
        if len(p) == 2:
            cur.append(p[1])
    return samples


def cmp(a, b, pats):
    A, B = load(a), load(b)
    print("total", len(A), len(B))
    for p in pats:
        x = sum(1 for _, s in A if any(p in f for f in s))
        y = sum(1 for _, s in B if any(p in f for f in s))
        print(f"{p:45s} {x:6d} {y:6d} {y - x:+6d}")


ALLOCATOR = ('mi_', '_mi_')
GROWTH = ('finish_grow', 'grow_one', 'do_reserve_and_handle', 'drop_in_place')


def alloc(files):
    for f in files:
        s = load(f)
        n = len(s)
        callers = collections.Counter()
        tot = 0
        for _, st in s:
            idx = [i for i, fr in enumerate(st) if fr.startswith(ALLOCATOR) or any(g in fr for g in GROWTH)]
            if not idx:
                continue
            tot += 1
            outside = [fr for fr in st[max(idx) + 1:] if not ('alloc::' in fr or 'core::' in fr or 'drop_in_place' in fr)]
            callers[outside[0][:70] if outside else '?'] += 1
        threads = collections.Counter(cm[:12] for cm, _ in s)
        print(f, n, dict(threads), f"alloc {100 * tot / n:.2f}%")
        for k, v in callers.most_common(10):
            print(f"   {100 * v / n:5.2f}% {k}")


if __name__ == "__main__":
    if sys.argv[1] == "cmp":
        cmp(sys.argv[2], sys.argv[3], sys.argv[4:])
    else:
        alloc(sys.argv[2:])
