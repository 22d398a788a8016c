#!/usr/bin/env python3
"""Stats paths on a mount in turn for a while and prints the rate and the median latency: the
cost of the kernel's requests to the mount for a stat, without data or creates in the way.

    bench/probe/stat-loop.py SECONDS PATH [PATH ...]
    bench/probe/stat-loop.py SECONDS --files DIR N     # makes DIR/f0000.. (100 bytes each) if missing, then stats them

With one directory PATH deep under the mount, every stat is the kernel's GETATTR of each
directory on the path (attribute timeout 0), all answered from the mount's memory: the FUSE
round trip alone. With N files stat'ed in turn faster than the entry timeout (1 s), every stat
is one GETATTR of the file: one `Lookup` RPC.
"""
import os
import sys
import time


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


if __name__ == '__main__':
    main()
