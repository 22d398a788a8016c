package io.strata.core.tier;

import io.netty.buffer.ByteBuf;
import io.strata.core.InodeId;

/**
 * A facet of a caching tier ({@link Tier#facet}) that takes a file's content from the client
 * that just wrote and published it, so that a read of the file on the same node is served from
 * the cache instead of fetching back the bytes it wrote a moment ago (L1: a small file created
 * and read on one node, a dataset written and then loaded by a job there).
 *
 * <p>The client offers the content only when it knows it whole: its handle wrote every byte of
 * the file, in order from offset 0, into a file that was empty, and each publish of the file since
 * then was its own (the namespace answered each with the data version one above the one before).
 */
public interface WrittenContent {
    /** The largest content worth offering, in bytes; 0 when the tier keeps none. */
    int maxBytes();

    /**
     * {@code content} (borrowed, indexes untouched) is the whole file {@code inode} at data
     * version {@code io.dataVersion()}: bytes {@code [0, content.readableBytes())} in chunks of
     * {@code chunkSize}. The tier may keep any of it, under its usual rules for {@code io}'s cache
     * hints, or none.
     */
    void published(InodeId inode, int chunkSize, ByteBuf content, IoOptions io);
}
