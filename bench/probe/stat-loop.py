#!/usr/bin/env python3
"""Stats paths on a mount in turn for a while and prints the rate and the median latency: the
cost of the kernel's requests to the mount for a stat, without data or creates in the way.

    bench/probe/stat-loop.py SECONDS PATH [PATH ...]
    bench/probe/stat-loop.py SECONDS --files DIR N     # makes DIR/f0000.. (100 bytes each) if missing, then stats them
    STAT_LOOP_PID=PID bench/probe/stat-loop.py ...     # also: CPU of process PID's threads during the loop, by name

With STAT_LOOP_PID (a mount's pid, from its ready.properties), the CPU time each group of the
process's threads used during the loop is printed, threads grouped by name without their
trailing number ("fuse-mnt-", "ForkJoinPool.co", "mount-net-"), from /proc/PID/task.

With one directory PATH deep under the mount, every stat is the kernel's GETATTR of each
directory on the path (attribute timeout 0), all answered from the mount's memory: the FUSE
round trip alone. With N files stat'ed in turn faster than the entry timeout (1 s), every stat
is one GETATTR of the file: one `Lookup` RPC.
"""
import os
import re
import sys
import time


def thread_cpu(pid):
    """CPU seconds (user + system) per thread-name group of process pid, from /proc."""
    tick = os.sysconf('SC_CLK_TCK')
    out = {}
    for tid in os.listdir('/proc/%s/task' % pid):
        try:
            name = open('/proc/%s/task/%s/comm' % (pid, tid)).read().strip()
            fields = open('/proc/%s/task/%s/stat' % (pid, tid)).read().rsplit(')', 1)[1].split()
        except OSError:
            continue  # the thread ended meanwhile
        group = re.sub(r'[0-9-]*$', '', name) or name
        out[group] = out.get(group, 0.0) + (int(fields[11]) + int(fields[12])) / tick
    return out


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    seconds = float(sys.argv[1])
    if sys.argv[2] == '--files':
        d, n = sys.argv[3], int(sys.argv[4])
        os.makedirs(d, exist_ok=True)
        paths = [os.path.join(d, 'f%04d' % i) for i in range(n)]
        for p in paths:
            if not os.path.exists(p):
                with open(p, 'wb') as f:
                    f.write(b'x' * 100)
    else:
        paths = sys.argv[2:]
    pid = os.environ.get('STAT_LOOP_PID')
    before = thread_cpu(pid) if pid else None
    lat = []
    t0 = time.time()
    while time.time() - t0 < seconds:
        for p in paths:
            s = time.perf_counter()
            os.stat(p)
            lat.append(time.perf_counter() - s)
    took = time.time() - t0
    lat.sort()
    print('%d stats in %.1f s: %.0f stats/s, p50 %.1f us, p99 %.1f us'
          % (len(lat), took, len(lat) / took, lat[len(lat) // 2] * 1e6, lat[int(len(lat) * 0.99)] * 1e6))
    if pid:
        after = thread_cpu(pid)
        for group in sorted(after, key=lambda g: -(after[g] - before.get(g, 0.0))):
            used = after[group] - before.get(group, 0.0)
            if used > 0:
                print('  threads %-16s %7.0f ms CPU, %6.1f us per stat' % (group, used * 1e3, used * 1e6 / len(lat)))


if __name__ == '__main__':
    main()
