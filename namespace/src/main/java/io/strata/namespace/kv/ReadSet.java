package io.strata.namespace.kv;

import java.util.ArrayList;
import java.util.List;
import java.util.TreeSet;

/**
 * The keys and ranges a transaction read outside its snapshot view: what a later commit must
 * not have written for this transaction to commit (optimistic validation, as FoundationDB's
 * resolvers do).
 */
final class ReadSet {
    private final TreeSet<byte[]> keys = new TreeSet<>(Bytes.ORDER);
    private final List<byte[][]> ranges = new ArrayList<>();

    void addKey(byte[] key) {
        keys.add(key.clone());
    }

    void addRange(byte[] begin, byte[] end) {
        if (Bytes.compare(begin, end) < 0) {
            ranges.add(new byte[][] {begin.clone(), end.clone()});
        }
    }

    boolean isEmpty() {
        return keys.isEmpty() && ranges.isEmpty();
    }

    /** Whether {@code w} wrote anything this read set covers. */
    boolean intersects(WriteBuffer.WriteSet w) {
        for (byte[] k : w.keys()) {
            if (keys.contains(k) || inRanges(k)) {
                return true;
            }
        }
        for (byte[][] r : w.ranges()) {
            byte[] first = keys.ceiling(r[0]);
            if (first != null && Bytes.compare(first, r[1]) < 0) {
                return true;
            }
            for (byte[][] mine : ranges) {
                if (Bytes.compare(mine[0], r[1]) < 0 && Bytes.compare(r[0], mine[1]) < 0) {
                    return true;
                }
            }
        }
        return false;
    }

    private boolean inRanges(byte[] k) {
        for (byte[][] r : ranges) {
            if (Bytes.compare(r[0], k) <= 0 && Bytes.compare(k, r[1]) < 0) {
                return true;
            }
        }
        return false;
    }
}
