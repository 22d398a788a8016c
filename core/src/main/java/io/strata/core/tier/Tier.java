package io.strata.core.tier;

import io.netty.buffer.ByteBuf;
import java.util.concurrent.CompletableFuture;

/**
 * One storage tier seen from the client: chunk reads and writes. Tiers stack (the client's one
 * builder composes {@code L1(L3)} today, {@code L1(L2(L3))} once L2 exists); an upper tier is
 * handed the tier below it and never imports another tier's module. Each tier reads what the
 * file's policy asks of it from the {@link IoOptions} of every call.
 *
 * <p>Buffer ownership: {@link #readAsync} returns an <b>owned</b> buffer the caller releases;
 * {@link #writeAsync} <b>borrows</b> {@code data} until its future completes (an implementation
 * that keeps the bytes longer retains them).
 *
 * <p>Optional capabilities are facets ({@link #facet}): a cache tier exposes
 * {@link CacheControl}; callers ask for a facet, never cast a tier to its class.
 *
 * <p>Failures complete the future exceptionally with a {@link io.strata.core.StrataException}.
 */
public interface Tier extends AutoCloseable {
    TierKind kind();

    /**
     * Reads up to {@code length} bytes at {@code offset} of the chunk. The result is shorter
     * when the chunk is (a missing chunk reads as empty); the caller fills holes with zeros up
     * to the file's length.
     */
    CompletableFuture<ByteBuf> readAsync(ChunkAddress chunk, long offset, int length, IoOptions options);

    /** Writes {@code data} at {@code offset}; complete once durable at this tier's promise. */
    CompletableFuture<Void> writeAsync(ChunkAddress chunk, long offset, ByteBuf data, IoOptions options);

    /** Sets the chunk's length (shrinking drops bytes; growing reads as zeros). */
    CompletableFuture<Void> truncateAsync(ChunkAddress chunk, long length, IoOptions options);

    /**
     * Makes {@code data} the chunk's whole content (its length becomes {@code data}'s). Tiers that
     * can do it in one update override this; the default writes, then truncates, so a reader in
     * between may see the new bytes over the old tail. {@code data} is borrowed until completion.
     */
    default CompletableFuture<Void> replaceAsync(ChunkAddress chunk, ByteBuf data, IoOptions options) {
        return writeAsync(chunk, 0, data, options).thenCompose(v -> truncateAsync(chunk, data.readableBytes(), options));
    }

    /** Removes the chunk; removing a missing chunk succeeds. */
    CompletableFuture<Void> removeAsync(ChunkAddress chunk, IoOptions options);

    /**
     * The indexes of the chunks of {@code file} at or past {@code fromIndex} that exist in this
     * tier or the tiers below it, ascending. It costs in proportion to the chunks that exist, not
     * to the file's length: a sparse file of a petabyte with three chunks lists three. Chunks a
     * crashed writer left past the file's recorded length are listed too. The garbage collector
     * and truncate remove what it lists.
     */
    CompletableFuture<long[]> chunksOfAsync(FileChunks file, long fromIndex, IoOptions options);

    /**
     * Makes every write accepted so far for {@code inode} durable in the tier below (a no-op for
     * tiers that never hold writes back).
     */
    default CompletableFuture<Void> flushAsync(io.strata.core.InodeId inode, IoOptions options) {
        return CompletableFuture.completedFuture(null);
    }

    /** The optional capability {@code type} if this tier has it (e.g. {@link CacheControl}); none by default. */
    default <T> java.util.Optional<T> facet(Class<T> type) {
        return java.util.Optional.empty();
    }

    @Override
    void close();
}
