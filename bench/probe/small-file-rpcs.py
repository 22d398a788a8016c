#!/usr/bin/env python3
"""One process, small files on a Strata mount: per-operation latency (p50/p99) and the RPCs
the mount sent and the FUSE requests it received per operation, read from its Prometheus endpoint.

    bench/probe/small-file-rpcs.py DATA_DIR [FILES]

DATA_DIR is a `strata up` data directory (its mount/ready.properties names the mount and its
metrics address). Phases, each over FILES files in a fresh directory: create (open O_CREAT|O_WRONLY,
16 KiB write, close), stat, read (open, read, close), unlink: those of
bench/peers/small-files-one.py, each result checked.
"""
import importlib.util, os, re, sys, urllib.request

def props(p):
    out = {}
    for line in open(p):
        if '=' in line and not line.startswith('#'):
            k, v = line.split('=', 1)
            out[k.strip()] = v.strip().replace('\\', '')
    return out

def counts(addr):
    """RPCs the mount sent, by message, and FUSE requests it received, by op (as 'fuse:OP')."""
    text = urllib.request.urlopen('http://%s/metrics' % addr, timeout=10).read().decode()
    out = {}
    for metric, label, prefix in (('strata_rpc_calls_seconds_count', 'message', ''),
                                  ('strata_fuse_requests_seconds_count', 'op', 'fuse:')):
        for m in re.finditer(r'^' + metric + r'\{([^}]*)\} (\S+)$', text, re.M):
            labels = dict(re.findall(r'(\w+)="([^"]*)"', m.group(1)))
            k = prefix + labels.get(label, '?')
            out[k] = out.get(k, 0) + float(m.group(2))
    return out

def per_op(diff):
    return ' '.join('%s=%.2f' % (k, v) for k, v in sorted(diff.items(), key=lambda kv: -kv[1]))

# the phases and their checks are those of bench/peers/small-files-one.py (bench peers' one-worker mode)
_spec = importlib.util.spec_from_file_location(
    'small_files_one', os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'peers', 'small-files-one.py'))
one = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(one)
pct = one.pct

def main():
    data = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 200
    r = props(os.path.join(data, 'mount', 'ready.properties'))
    mnt, addr = r['dir'], r['metrics']
    d = os.path.join(mnt, 'probe-%d' % os.getpid())
    os.mkdir(d)
    buf = os.urandom(16384)
    names = [os.path.join(d, 'f%05d' % i) for i in range(n)]

    print('%-7s %8s %9s %9s  %s' % ('op', 'ops/s', 'p50 ms', 'p99 ms', 'RPCs per op (mount -> meta/storage); FUSE requests per op'))
    for name, f in one.phases(buf):
        before = counts(addr)
        lat, secs = one.timed(f, names)
        after = counts(addr)
        diff = {k: (after.get(k, 0) - before.get(k, 0)) / n for k in after}
        diff = {k: v for k, v in diff.items() if v >= 0.005}
        rpcs = {k: v for k, v in diff.items() if not k.startswith('fuse:')}
        fuse = {k[5:]: v for k, v in diff.items() if k.startswith('fuse:')}
        print('%-7s %8.0f %9.2f %9.2f  total=%.2f %s' % (name, n / secs, pct(lat, 0.5) * 1e3, pct(lat, 0.99) * 1e3,
                                                         sum(rpcs.values()), per_op(rpcs)))
        print('%-7s %8s %9s %9s  FUSE: %s' % ('', '', '', '', per_op(fuse)))
    os.rmdir(d)

main()
