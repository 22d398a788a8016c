package io.strata.client;

import io.netty.buffer.ByteBuf;
import io.strata.core.util.Crc32c;
import io.strata.protocol.meta.Checkpoint;
import java.util.Map;
import java.util.TreeMap;

/**
 * The CRC32C of a file as one handle writes it, computed from the bytes as they are written
 * (never by reading them back), for checkpoint manifests (docs/checkpoints.md). Writes may
 * arrive in any order: contiguous runs are kept with their CRCs and joined with
 * {@link Crc32c#combine} as they meet. A write over bytes already written, a truncate, or a
 * handle opened on a file that already had bytes make the checksum unknown.
 */
final class ContentCrc {
    private record Run(long end, int crc) {
    }

    /** Runs by start offset; none overlap or touch. */
    private final TreeMap<Long, Run> runs = new TreeMap<>();
    private boolean unknown;

    /** A tracker for a handle opened on a file of {@code lengthAtOpen} bytes (0: empty or truncated at open). */
    ContentCrc(long lengthAtOpen) {
        this.unknown = lengthAtOpen != 0;
    }

    /** Bytes {@code data} (borrowed, indexes untouched) are being written at {@code pos}. */
    synchronized void wrote(long pos, ByteBuf data) {
        int n = data.readableBytes();
        if (unknown || n == 0) {
            return;
        }
        long end = pos + n;
        Map.Entry<Long, Run> before = runs.floorEntry(pos);
        Map.Entry<Long, Run> after = runs.ceilingEntry(pos);
        if ((before != null && before.getValue().end() > pos) || (after != null && after.getKey() < end)) {
            forget(); // an overwrite: the bytes under it were checksummed already
            return;
        }
        long start = pos;
        int crc = Crc32c.of(data);
        if (before != null && before.getValue().end() == pos) {
            crc = Crc32c.combine(before.getValue().crc(), crc, n);
            start = before.getKey();
            runs.remove(start);
        }
        Run next = runs.get(end);
        if (next != null) {
            crc = Crc32c.combine(crc, next.crc(), next.end() - end);
            runs.remove(end);
            end = next.end();
        }
        runs.put(start, new Run(end, crc));
    }

    /** The file was truncated to 0 right after open (O_TRUNC): it is empty, as if opened so. */
    synchronized void emptied() {
        unknown = false;
        runs.clear();
    }

    synchronized void forget() {
        unknown = true;
        runs.clear();
    }

    /** The CRC of bytes {@code [0, length())} when this handle wrote all of them, once each; else {@link Checkpoint#NO_CRC}. */
    synchronized long crc() {
        if (unknown || runs.size() != 1 || runs.firstKey() != 0) {
            return Checkpoint.NO_CRC;
        }
        return runs.firstEntry().getValue().crc() & 0xFFFF_FFFFL;
    }

    /** The end of the one run from offset 0 (what {@link #crc} covers); 0 when there is none. */
    synchronized long length() {
        return unknown || runs.size() != 1 || runs.firstKey() != 0 ? 0 : runs.firstEntry().getValue().end();
    }
}
