#!/usr/bin/env python3
"""Unlinks on a mount from several processes, all in one directory or each in its own: how
much of the delete rate the kernel's per-directory lock leaves to the file system.

    bench/probe/unlink-spread.py DIR PROCS FILES same|spread

Makes PROCS x FILES empty files under DIR (one directory DIR/u, or DIR/u0..u<PROCS-1> with
`spread`), waits 1.5 s (so the kernel's entries of the new names expire, as in a delete phase
that follows a create phase), then PROCS processes unlink their files at once and the rate is
printed. The VFS holds the parent directory's lock across each unlink, so in one directory the
unlinks of all processes run one after another whatever the file system does; in separate
directories they may overlap. Run it on a local directory for the baseline.
"""
import os
import sys
import time
from multiprocessing import Process


def main():
    if len(sys.argv) != 5 or sys.argv[4] not in ('same', 'spread'):
        sys.exit(__doc__)
    base, procs, files, same = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == 'same'
    if procs < 1 or files < 1:
        sys.exit('PROCS and FILES must be at least 1')

    def directory(p):
        return os.path.join(base, 'u' if same else 'u%d' % p)

    def name(p, i):
        return os.path.join(directory(p), 'p%d_%d' % (p, i))

    for p in range(procs):
        os.makedirs(directory(p), exist_ok=True)
        for i in range(files):
            open(name(p, i), 'wb').close()
    time.sleep(1.5)

    def work(p):
        for i in range(files):
            os.unlink(name(p, i))

    start = time.time()
    workers = [Process(target=work, args=(p,)) for p in range(procs)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    took = time.time() - start
    failed = [w.exitcode for w in workers if w.exitcode != 0]
    if failed:
        sys.exit('a worker failed (exit codes %s)' % failed)
    print('procs=%d dirs=%s files=%d unlinks/s=%.0f' % (procs, 'one' if same else 'own', procs * files, procs * files / took))


if __name__ == '__main__':
    main()
