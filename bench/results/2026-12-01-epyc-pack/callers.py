import sys, collections, re
# callers.py FILE LEAF_SUBSTR [DEPTH]: for samples whose leaf symbol contains LEAF_SUBSTR, count the first DEPTH
# frames above the leaf (joined) that are not std/alloc/core internals.
f, leaf = sys.argv[1], sys.argv[2]; depth = int(sys.argv[3]) if len(sys.argv) > 3 else 2
skip = re.compile(r"^(core::|alloc::|std::|<alloc|<core|__mem|_mi_|mi_)")
cnt = collections.Counter(); total = 0; n = 0
stack = []
def flush():
    global n
    if not stack: return
    if leaf in stack[0]:
        fr = [s for s in stack[1:] if not skip.match(s)][:depth]
        cnt[" <- ".join(fr)] += 1; n += 1
for line in open(f, errors="replace"):
    if not line.strip():
        flush(); stack.clear(); continue
    if line[0] not in " \t":
        total += 1; continue
    parts = line.split(None, 1)
    sym = parts[1].strip() if len(parts) > 1 else "?"
    sym = re.sub(r"\+0x[0-9a-f]+$", "", sym)
    stack.append(sym)
flush()
print(f"{n} of {total} samples ({100*n/max(total,1):.1f}%)")
for k, v in cnt.most_common(15): print(f"{100*v/total:6.2f}%  {k[:200]}")
