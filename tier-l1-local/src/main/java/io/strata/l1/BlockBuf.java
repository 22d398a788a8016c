package io.strata.l1;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.buffer.UnpooledByteBufAllocator;
import io.netty.buffer.UnpooledDirectByteBuf;

/**
 * The buffer of one cache block: memory from Netty's pooled allocator (a fresh 1 MiB direct
 * allocation costs ~1-3 ms in page faults and zeroing, reading a block from the page cache ~70
 * µs), inside a buffer object of its own that is never recycled. A reader that races an eviction
 * may call {@code retain()} on a block the cache just released: on this object that fails
 * ({@code IllegalReferenceCountException}) and the reader fetches the block again; on a recycled
 * pooled buffer object it could succeed on another block's bytes. The pooled memory goes back to
 * the pool when the last reference to this object is released.
 */
final class BlockBuf extends UnpooledDirectByteBuf {
    private static final ByteBufAllocator POOL = PooledByteBufAllocator.DEFAULT;

    private final ByteBuf backing;

    private BlockBuf(ByteBuf backing) {
        super(UnpooledByteBufAllocator.DEFAULT, backing.nioBuffer(0, backing.capacity()), backing.capacity());
        this.backing = backing;
        clear();
    }

    /** An empty block buffer of exactly {@code capacity} bytes (owned by the caller). */
    static ByteBuf allocate(int capacity) {
        ByteBuf b = POOL.directBuffer(capacity, capacity);
        try {
            return new BlockBuf(b);
        } catch (RuntimeException e) {
            b.release();
            throw e;
        }
    }

    @Override
    protected void deallocate() {
        super.deallocate();
        backing.release();
    }
}
