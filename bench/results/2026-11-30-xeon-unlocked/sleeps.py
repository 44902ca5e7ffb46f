"""sleeps.py SCHED_TXT: from `perf script` of `perf record -a -e sched:sched_switch --call-graph dwarf` (sleeps.sh),
the cores' idle and busy time per command, and where the server's write path (threads inside `write_lines`)
slept: each sleep (switched out in state S or D) lasts until the thread is switched in again, summed per user
stack (the first frames that are not the kernel's)."""
import collections
import re
import sys

HEAD = re.compile(r'^\s*(\S.*?)\s+(\d+)\s+\[(\d+)\]\s+([\d.]+):\s+sched:sched_switch:\s+prev_comm=(.*?) prev_pid=(\d+) '
                  r'prev_prio=\d+ prev_state=(\S+) ==> next_comm=(.*?) next_pid=(\d+)')
KERNEL = ('__', 'schedule', 'futex', 'do_', 'entry_', 'syscall', '[unknown]', 'irq', 'asm_', 'exc_', 'handle_mm')


def events(path):
    cur = None
    for line in open(path):
        m = HEAD.match(line)
        if m:
            if cur:
                yield cur
            cur = dict(cpu=int(m[3]), t=float(m[4]), prev_comm=m[5], prev=int(m[6]), state=m[7], next_comm=m[8],
                       next=int(m[9]), stack=[])
        elif cur is not None and line.strip():
            parts = line.split(None, 1)
            if len(parts) > 1:
                sym = re.sub(r'\+0x[0-9a-f]+$', '', parts[1].strip())
                for _ in range(3):
                    sym = re.sub(r'<[^<>]*>', '', sym)
                cur['stack'].append(sym)
    if cur:
        yield cur


running, busy, slept_at = {}, collections.Counter(), {}
sleeps, count = collections.Counter(), collections.Counter()
first = last = None
for e in events(sys.argv[1]):
    first = e['t'] if first is None else first
    last = e['t']
    if e['cpu'] in running:
        comm, since = running[e['cpu']]
        busy[comm] += e['t'] - since
    running[e['cpu']] = ('idle' if e['next'] == 0 else e['next_comm'], e['t'])
    if e['prev_comm'] == 'tokio-rt-worker' and e['state'] in ('S', 'D'):
        if any('write_lines' in f for f in e['stack']):
            where = ' < '.join([f for f in e['stack'] if not f.startswith(KERNEL)][:6])
        else:
            where = '(not in write_lines: a thread waiting for work)'
        slept_at[e['prev']] = (e['t'], where)
    if e['next'] in slept_at:
        t, where = slept_at.pop(e['next'])
        sleeps[where] += e['t'] - t
        count[where] += 1
print('span %.2f s; idle %.2f core-s; busy: %s' % (last - first, busy['idle'],
      ', '.join('%s %.2f' % (k, v) for k, v in busy.most_common(6) if k != 'idle')))
for where, secs in sleeps.most_common(12):
    print('%7.3f s %6d  %s' % (secs, count[where], where))
