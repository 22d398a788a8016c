#!/usr/bin/env python3
"""One process, small files on a Strata mount: per-operation latency (p50/p99), the RPCs the
mount sent (and their mean time), the FUSE requests it received and the meta service's own
operations (and their mean time inside the service) per operation, read from the mount's and the
meta service's Prometheus endpoints.

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

def meters(addr, series):
    """Counts and total seconds of timers on a metrics endpoint: {(prefix + label value): [count, sum]}."""
    text = urllib.request.urlopen('http://%s/metrics' % addr, timeout=10).read().decode()
    out = {}
    for metric, label, prefix in series:
        for m in re.finditer(r'^' + metric + r'_seconds_(count|sum)\{([^}]*)\} (\S+)$', text, re.M):
            labels = dict(re.findall(r'(\w+)="([^"]*)"', m.group(2)))
            k = prefix + labels.get(label, '?')
            out.setdefault(k, [0.0, 0.0])[0 if m.group(1) == 'count' else 1] += float(m.group(3))
    return out

MOUNT = (('strata_rpc_calls', 'message', ''), ('strata_fuse_requests', 'op', 'fuse:'))
META = (('strata_meta_ops', 'op', ''),)

def per_op(diff, n, timed):
    """'name=calls per op' (and the mean ms of a call when timed), most frequent first."""
    rows = sorted(((k, c / n, s / c * 1e3) for k, (c, s) in diff.items() if c / n >= 0.005), key=lambda r: -r[1])
    return ' '.join(('%s=%.2f (%.2f ms)' if timed else '%s=%.2f') % ((k, per, ms) if timed else (k, per)) for k, per, ms in rows)

def since(before, after):
    return {k: (c - before.get(k, [0, 0])[0], s - before.get(k, [0, 0])[1]) for k, (c, s) in after.items()
            if c > before.get(k, [0, 0])[0]}

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
    meta = props(os.path.join(data, 'meta', 'ready.properties')).get('metrics')
    d = os.path.join(mnt, 'probe-%d' % os.getpid())
    os.mkdir(d)
    buf = os.urandom(16384)
    names = [os.path.join(d, 'f%05d' % i) for i in range(n)]

    print('%-7s %8s %9s %9s  %s' % ('op', 'ops/s', 'p50 ms', 'p99 ms',
                                    'RPCs per op (mount -> meta/storage, mean ms each); FUSE requests per op; '
                                    'meta service operations per op (mean ms inside the service)'))
    for name, f in one.phases(buf):
        before, meta_before = meters(addr, MOUNT), meters(meta, META) if meta else {}
        lat, secs = one.timed(f, names)
        diff, meta_diff = since(before, meters(addr, MOUNT)), since(meta_before, meters(meta, META)) if meta else {}
        rpcs = {k: v for k, v in diff.items() if not k.startswith('fuse:')}
        fuse = {k[5:]: v for k, v in diff.items() if k.startswith('fuse:')}
        print('%-7s %8.0f %9.2f %9.2f  total=%.2f %s' % (name, n / secs, pct(lat, 0.5) * 1e3, pct(lat, 0.99) * 1e3,
                                                         sum(c for c, _ in rpcs.values()) / n, per_op(rpcs, n, True)))
        print('%-7s %8s %9s %9s  FUSE: %s' % ('', '', '', '', per_op(fuse, n, False)))
        if meta:
            print('%-7s %8s %9s %9s  meta: %s' % ('', '', '', '', per_op(meta_diff, n, True)))
    os.rmdir(d)

main()
