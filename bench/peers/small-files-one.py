#!/usr/bin/env python3
"""Small files with one worker, as a single `tar -x`, `git checkout` or `rm -rf` meets them:
each operation waits for the one before it.

    bench/peers/small-files-one.py DIR FILES [OUT.json]

In a fresh directory under DIR, four phases over FILES files of 16 KiB, one after the other:
create (open O_CREAT|O_WRONLY|O_TRUNC, one 16 KiB write, close), stat, read (open, drop the
file's cached pages with posix_fadvise DONTNEED as fio's invalidate=1 does, read 16 KiB,
close) and unlink. Every result is checked (a short write or read, or a stat with the wrong
size, is an error). Prints one line per phase and writes
{"create": {"ops_per_s": .., "p50_ms": .., "p99_ms": .., "files": N}, ...} to OUT.json
(or stdout). Exit status 1 when an operation failed.
"""
import json
import os
import sys
import time


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def phases(buf):
    """The four phases, in order, as (name, operation on one path); each checks its result."""
    def create(p):
        fd = os.open(p, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o644)
        try:
            if os.write(fd, buf) != len(buf):
                raise OSError('short write to %s' % p)
        finally:
            os.close(fd)

    def stat(p):
        size = os.stat(p).st_size
        if size != len(buf):
            raise OSError('%s: size %d, not %d' % (p, size, len(buf)))

    def read(p):
        fd = os.open(p, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            got = os.read(fd, len(buf))
        finally:
            os.close(fd)
        if got != buf:
            raise OSError('%s: read back %d bytes that differ from those written' % (p, len(got)))

    def unlink(p):
        os.unlink(p)

    return (('create', create), ('stat', stat), ('read', read), ('unlink', unlink))


def timed(f, names):
    """Runs f on every name in turn: each call's latency and the whole loop's time, in seconds."""
    lat = []
    t0 = time.perf_counter()
    for p in names:
        s = time.perf_counter()
        f(p)
        lat.append(time.perf_counter() - s)
    return lat, time.perf_counter() - t0


def main():
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    base, n = sys.argv[1], int(sys.argv[2])
    out = sys.argv[3] if len(sys.argv) > 3 else None
    if n < 1:
        sys.exit("small-files-one: FILES must be at least 1, not %d" % n)
    d = os.path.join(base, 'one-%d' % os.getpid())
    os.mkdir(d)
    buf = os.urandom(16384)
    names = [os.path.join(d, 'f%06d' % i) for i in range(n)]

    result = {}
    for name, f in phases(buf):
        lat, secs = timed(f, names)
        result[name] = {'ops_per_s': round(n / secs, 1), 'p50_ms': round(pct(lat, 0.5) * 1e3, 4),
                        'p99_ms': round(pct(lat, 0.99) * 1e3, 4), 'files': n}
        print('%-7s %9.1f ops/s  p50 %8.3f ms  p99 %8.3f ms' % (name, n / secs, pct(lat, 0.5) * 1e3, pct(lat, 0.99) * 1e3),
              file=sys.stderr)
    os.rmdir(d)
    text = json.dumps(result, indent=2)
    if out:
        with open(out, 'w') as fh:
            fh.write(text + '\n')
    else:
        print(text)


if __name__ == '__main__':
    try:
        main()
    except OSError as e:
        sys.exit('small-files-one: %s' % e)
