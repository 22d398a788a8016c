package io.strata.l1;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import com.github.benmanes.caffeine.cache.Expiry;
import com.github.benmanes.caffeine.cache.RemovalCause;
import io.netty.buffer.ByteBuf;
import io.netty.util.IllegalReferenceCountException;
import io.strata.core.time.StrataClock;
import java.util.ArrayList;
import java.util.List;
import java.util.function.BiConsumer;
import java.util.function.Predicate;

/**
 * The memory tier: blocks in a Caffeine cache weighed by bytes. Caffeine's W-TinyLFU policy
 * admits a new block only if it is more popular than the one it would evict, so a one-time scan
 * passes through its small admission window without wiping the hot set.
 *
 * <p>Buffer ownership: the cache holds one reference to each block (a read-only view of a direct
 * buffer) and releases it when the block leaves. {@link #get} returns a block with a reference
 * taken for the caller (owned), or null; a block evicted between the lookup and the retain reads
 * as a miss. Maintenance and removal listeners run on the calling thread (never the common pool).
 */
final class MemoryTier {
    /** Bookkeeping bytes charged per block on top of its data (so empty end-of-chunk blocks weigh something). */
    static final int OVERHEAD = 96;

    /** A cached block: its bytes and its time-to-idle (0: none). */
    record Block(ByteBuf data, long ttlNanos) {
    }

    private final Cache<BlockKey, Block> cache;

    MemoryTier(long capacityBytes, StrataClock clock, BiConsumer<Block, RemovalCause> onRemoval) {
        this.cache = Caffeine.newBuilder()
                .maximumWeight(capacityBytes)
                .weigher((BlockKey k, Block b) -> b.data().capacity() + OVERHEAD)
                .expireAfter(new Expiry<BlockKey, Block>() {
                    @Override
                    public long expireAfterCreate(BlockKey key, Block b, long now) {
                        return b.ttlNanos() > 0 ? b.ttlNanos() : Long.MAX_VALUE;
                    }

                    @Override
                    public long expireAfterUpdate(BlockKey key, Block b, long now, long current) {
                        return b.ttlNanos() > 0 ? b.ttlNanos() : Long.MAX_VALUE;
                    }

                    @Override
                    public long expireAfterRead(BlockKey key, Block b, long now, long current) {
                        return b.ttlNanos() > 0 ? b.ttlNanos() : current;
                    }
                })
                .ticker(clock::nanoTime)
                .executor(Runnable::run)
                .removalListener((BlockKey k, Block b, RemovalCause cause) -> {
                    if (b != null) {
                        onRemoval.accept(b, cause);
                        b.data().release();
                    }
                })
                .build();
    }

    /** The block with a reference for the caller (owned), or null. */
    ByteBuf get(BlockKey key) {
        Block b = cache.getIfPresent(key);
        if (b == null) {
            return null;
        }
        try {
            return b.data().retain();
        } catch (IllegalReferenceCountException raced) {
            return null; // evicted and released between the lookup and the retain
        }
    }

    /** Caches {@code data} (borrowed: the cache takes its own reference). */
    void put(BlockKey key, ByteBuf data, long ttlNanos) {
        cache.put(key, new Block(data.retain(), ttlNanos));
    }

    void invalidate(BlockKey key) {
        cache.invalidate(key);
    }

    /** Removes every block whose key matches; returns how many. */
    int removeIf(Predicate<BlockKey> which) {
        List<BlockKey> keys = new ArrayList<>();
        for (BlockKey k : cache.asMap().keySet()) {
            if (which.test(k)) {
                keys.add(k);
            }
        }
        cache.invalidateAll(keys);
        return keys.size();
    }

    void clear() {
        cache.invalidateAll();
        cache.cleanUp();
    }

    void cleanUp() {
        cache.cleanUp();
    }

    /** [blocks, bytes] of the blocks whose key matches. */
    long[] usage(Predicate<BlockKey> which) {
        long n = 0;
        long bytes = 0;
        for (var e : cache.asMap().entrySet()) {
            if (which.test(e.getKey())) {
                n++;
                bytes += e.getValue().data().capacity();
            }
        }
        return new long[]{n, bytes};
    }

    long weightedBytes() {
        return cache.policy().eviction().map(e -> e.weightedSize().orElse(0)).orElse(0L);
    }

    long blocks() {
        return cache.estimatedSize();
    }
}
