package io.strata.namespace.kv;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.NavigableMap;
import java.util.NavigableSet;
import java.util.TreeMap;

/**
 * The writes of one transaction before commit, for a backend that applies them itself (LMDB):
 * point writes and clears by key, atomic operations kept unresolved until their base value is
 * known, and cleared ranges. A clear of a range drops the buffered writes inside it; a later
 * write of a key in the range is kept, so at commit "ranges first, then keys" gives the order
 * the transaction issued them in.
 */
final class WriteBuffer {
    /** An atomic operation applied to a base value that is only read at commit. */
    record AtomicOp(boolean max, long operand) {
        byte[] apply(byte[] base) {
            long b = Bytes.readLe64(base);
            long v = max ? (Long.compareUnsigned(b, operand) >= 0 && base != null ? b : operand) : b + operand;
            return Bytes.le64(v);
        }
    }

    /** A buffered write: a definite value (null = cleared), or atomic ops over the stored value. */
    static final class Entry {
        final boolean definite;
        final byte[] value;
        final List<AtomicOp> ops;

        private Entry(boolean definite, byte[] value, List<AtomicOp> ops) {
            this.definite = definite;
            this.value = value;
            this.ops = ops;
        }

        static Entry of(byte[] value) {
            return new Entry(true, value, List.of());
        }

        byte[] resolve(byte[] stored) {
            if (definite) {
                return value;
            }
            byte[] v = stored;
            for (AtomicOp op : ops) {
                v = op.apply(v);
            }
            return v;
        }
    }

    private final TreeMap<byte[], Entry> entries = new TreeMap<>(Bytes.ORDER);
    private final List<byte[][]> clearedRanges = new ArrayList<>();

    boolean isEmpty() {
        return entries.isEmpty() && clearedRanges.isEmpty();
    }

    void set(byte[] key, byte[] value) {
        entries.put(key.clone(), Entry.of(value.clone()));
    }

    void clear(byte[] key) {
        entries.put(key.clone(), Entry.of(null));
    }

    void clearRange(byte[] begin, byte[] end) {
        if (Bytes.compare(begin, end) >= 0) {
            return;
        }
        entries.subMap(begin, true, end, false).clear();
        clearedRanges.add(new byte[][] {begin.clone(), end.clone()});
    }

    void atomic(byte[] key, AtomicOp op) {
        Entry e = entries.get(key);
        if (e == null && inClearedRange(key)) {
            entries.put(key.clone(), Entry.of(op.apply(null)));
        } else if (e == null) {
            List<AtomicOp> ops = new ArrayList<>();
            ops.add(op);
            entries.put(key.clone(), new Entry(false, null, ops));
        } else if (e.definite) {
            entries.put(key, Entry.of(op.apply(e.value)));
        } else {
            e.ops.add(op);
        }
    }

    /** The buffered entry of {@code key}, or null when the transaction did not write it. */
    Entry entry(byte[] key) {
        return entries.get(key);
    }

    boolean inClearedRange(byte[] key) {
        for (byte[][] r : clearedRanges) {
            if (Bytes.compare(r[0], key) <= 0 && Bytes.compare(key, r[1]) < 0) {
                return true;
            }
        }
        return false;
    }

    /** Buffered entries with keys in [begin, end), in the requested order. */
    NavigableMap<byte[], Entry> entries(byte[] begin, byte[] end, boolean reverse) {
        NavigableMap<byte[], Entry> m = entries.subMap(begin, true, end, false);
        return reverse ? m.descendingMap() : m;
    }

    List<byte[][]> clearedRanges() {
        return clearedRanges;
    }

    Iterable<Map.Entry<byte[], Entry>> all() {
        return entries.entrySet();
    }

    /** The keys and ranges this transaction writes, for conflict checks by later transactions. */
    WriteSet writeSet() {
        return new WriteSet(entries.navigableKeySet(), List.copyOf(clearedRanges));
    }

    /** What a committed transaction wrote. */
    record WriteSet(NavigableSet<byte[]> keys, List<byte[][]> ranges) {
    }
}
