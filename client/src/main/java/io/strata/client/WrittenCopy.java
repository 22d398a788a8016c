package io.strata.client;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.strata.core.InodeId;
import io.strata.core.tier.IoOptions;
import io.strata.core.tier.WrittenContent;

/**
 * The bytes one handle wrote, kept while they are the whole file, so that each publish can hand
 * the file's new version to the cache tier ({@link WrittenContent}) and a read on this node need
 * not fetch back what was just written.
 *
 * <p>They are the whole file while: the file's length was 0 when the handle opened (the handle
 * of an O_TRUNC open of a file with bytes keeps no copy; the truncate at open restarts one that
 * is kept, {@link #emptied}), every write appended at the end of what was written before, they fit in
 * the tier's {@link WrittenContent#maxBytes} and in the client's budget, no truncate went through
 * this handle, and every publish of the file since was this handle's own: the namespace answered
 * each with the data version one above the one before. Once any of this fails the copy is
 * dropped for good and the handle writes as if there were none.
 */
final class WrittenCopy {
    private final WrittenContent tier;
    private final WriteBudget budget;
    private final int max;
    /** The bytes written so far (allocated at the first write); null once dropped. */
    private ByteBuf bytes = Unpooled.EMPTY_BUFFER;
    /** False once dropped: read without the lock on every write of the handle. */
    private volatile boolean live = true;
    /** The data version the file had after the last change this handle knows was the only one. */
    private long version;
    private long held;

    private WrittenCopy(WrittenContent tier, WriteBudget budget, long version) {
        this.tier = tier;
        this.budget = budget;
        this.max = tier.maxBytes();
        this.version = version;
    }

    /** A copy for a handle that opened an empty file at {@code version}; null when the tier keeps none. */
    static WrittenCopy start(WrittenContent tier, WriteBudget budget, long version) {
        return tier.maxBytes() <= 0 ? null : new WrittenCopy(tier, budget, version);
    }

    /** Whether the copy is still kept (a dropped copy stays dropped). */
    boolean live() {
        return live;
    }

    /** Bytes {@code data} (borrowed, indexes untouched) are being written at {@code pos}. */
    synchronized void wrote(long pos, ByteBuf data) {
        int n = data.readableBytes();
        if (bytes == null || n == 0) {
            return;
        }
        if (pos != bytes.writerIndex() || n > max - bytes.writerIndex() || !budget.tryAcquire(n)) {
            drop();
            return;
        }
        held += n;
        if (bytes.maxCapacity() == 0) {
            bytes = Unpooled.buffer(Math.max(n, Math.min(max, 16 * 1024)), max);
        }
        bytes.writeBytes(data, data.readerIndex(), n);
    }

    /** The file was truncated to 0 as the handle opened, which the namespace answered with {@code v}. */
    synchronized void emptied(long v) {
        if (bytes != null) {
            bytes.clear();
            version = v;
            budget.release(held);
            held = 0;
        }
    }

    /**
     * A publish by this handle was answered with data version {@code v}. The namespace moves the
     * version up by exactly one for a publish after writes ({@code wrote}) and leaves it for one
     * without: when {@code v} is that, the copy is the file's content at {@code v} and goes to the
     * tier (unless {@code offer} is false: a write of this handle raced the publish, or another
     * handle here writes the file too); any other version means someone else changed the file.
     */
    synchronized void published(long v, boolean wrote, boolean offer, InodeId inode, int chunkSize, IoOptions io) {
        if (bytes == null) {
            return;
        }
        if (v != (wrote ? version + 1 : version)) {
            drop();
            return;
        }
        version = v;
        if (wrote && offer) {
            tier.published(inode, chunkSize, bytes, io.withDataVersion(v));
        }
    }

    /**
     * Stops keeping the bytes (a truncate, a failed write or publish: bytes the copy holds may not
     * have reached the tiers; the handle's close) and gives back their budget.
     */
    synchronized void drop() {
        live = false;
        if (bytes != null) {
            bytes.release();
            bytes = null;
        }
        budget.release(held);
        held = 0;
    }
}
