package io.strata.client;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.strata.core.ChunkId;
import io.strata.core.InodeId;
import io.strata.core.Status;
import io.strata.core.StrataException;
import io.strata.core.tier.WrittenContent;
import io.strata.core.util.Futures;
import io.strata.protocol.meta.Caller;
import io.strata.protocol.meta.Checkpoint;
import io.strata.protocol.meta.InodeAttrs;
import io.strata.protocol.meta.SetAttr;
import java.nio.ByteBuffer;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * An open file: positional reads and writes, fsync, truncate, close. Thread-safe; any number of
 * reads and writes may be in flight at once (FUSE sends them concurrently).
 *
 * <ul>
 *   <li><b>Reads</b> never return bytes that were not written: the range is clamped to the
 *       file's length (published, plus this client's own unpublished writes) and holes read as
 *       zeros. A read first waits for this client's writes that overlap it (read-your-writes).
 *       Sequential reads are served through a readahead window ({@link Readahead}); random
 *       reads fetch exactly what was asked. In a {@code strict} directory there is no readahead
 *       and no client cache, and a read past the known length asks the namespace again.</li>
 *   <li><b>Writes</b> are gathered per file ({@link FileWrites}) and sent as large chunk writes
 *       in parallel; in a {@code strict} directory each write completes once the chain has it.</li>
 *   <li><b>fsync and close</b> send what is gathered, flush L1 write-back, wait until the data
 *       is at the policy's durability tier (the L3 chain has committed it), then publish the
 *       exact length and bump the data version through the namespace. Only then do other
 *       clients' opens see the new bytes (close-to-open).</li>
 * </ul>
 *
 * <p>Buffer ownership: {@link #readAsync} returns an <b>owned</b> buffer; {@link #writeAsync}
 * <b>borrows</b> {@code data} until its future completes.
 */
public final class StrataFile implements AutoCloseable {
    private final ClientCore core;
    private final FileState state;
    private final Caller caller;
    private final long session;
    private final boolean readable;
    private final boolean writable;
    private final Readahead readahead;
    private final AtomicBoolean closed = new AtomicBoolean();
    /** The content checksum as this handle writes the file (null: read-only handle). */
    private final ContentCrc content;
    /** What this handle wrote while it is the whole file, for the cache tier (null: not kept). */
    private final WrittenCopy kept;
    private long unpublishedEnd = -1;
    private boolean wrote;
    private long writeSeq;

    StrataFile(ClientCore core, FileState state, Caller caller, long session, boolean readable, boolean writable) {
        this.core = core;
        this.state = state;
        this.caller = caller;
        this.session = session;
        this.readable = readable;
        this.writable = writable;
        long ra = core.config().readahead().bytes();
        this.readahead = state.policy.strict() || ra == 0 ? null
                : new Readahead(state.layout.chunkSize(), ra, this::fetch, core.alloc());
        this.content = writable ? new ContentCrc(state.length()) : null;
        this.kept = writable && state.length() == 0 && state.io().cache().cacheData()
                ? state.tier.facet(WrittenContent.class).map(t -> WrittenCopy.start(t, core.keptBudget(), state.dataVersion())).orElse(null)
                : null;
        state.attach(this);
        if (untracked()) {
            core.untrackedOpened();
        }
    }

    /** Whether this handle reads without a namespace session (a read-only open, session 0). */
    boolean untracked() {
        return session == 0;
    }

    Caller caller() {
        return caller;
    }

    public InodeId inode() {
        return state.inode;
    }

    public boolean isWritable() {
        return writable;
    }

    public boolean isReadable() {
        return readable;
    }

    /** The file's consistency mode and the rest of its policy. */
    public io.strata.config.policy.Policy policy() {
        return state.policy.policy();
    }

    /** The data version this client reads the file at. */
    public long dataVersion() {
        return state.dataVersion();
    }

    /** The file's length as this client sees it (published, plus its own unpublished writes). */
    public long size() {
        return state.length();
    }

    /**
     * The file was truncated to 0 as it opened (O_TRUNC), which the namespace answered with data
     * version {@code version}: what this handle writes from now is the whole content.
     */
    void truncatedAtOpen(long version) {
        if (content != null) {
            content.emptied();
        }
        if (kept != null) {
            kept.emptied(version);
        }
    }

    synchronized long unpublishedEnd() {
        return unpublishedEnd;
    }

    /** Whether this handle wrote since its last publish. */
    synchronized boolean wroteSincePublish() {
        return wrote;
    }

    synchronized void cutUnpublished(long size) {
        if (unpublishedEnd > size) {
            unpublishedEnd = size;
        }
    }

    private void checkOpen() {
        if (closed.get()) {
            throw new StrataException(Status.STALE_HANDLE, "file " + state.inode + " is closed");
        }
    }

    // ---- reads ----

    /** Reads up to {@code len} bytes at {@code pos}; shorter only at the end of the file (empty past it). */
    public CompletableFuture<ByteBuf> readAsync(long pos, int len) {
        try {
            checkOpen();
            if (!readable) {
                throw new StrataException(Status.INVALID_ARGUMENT, "file " + state.inode + " is not open for reading");
            }
            if (pos < 0 || len < 0) {
                throw new StrataException(Status.INVALID_ARGUMENT, "bad read range " + pos + "+" + len);
            }
        } catch (StrataException e) {
            return CompletableFuture.failedFuture(e);
        }
        CompletableFuture<Void> known = CompletableFuture.completedFuture(null);
        if (state.policy.strict() && pos + len > state.length()) {
            known = core.meta().getattrAsync(caller, state.inode).thenAccept(state::seen);
        }
        return known.thenCompose(v -> state.writes.settle(pos, pos + len)).thenCompose(v -> {
            long length = state.length();
            if (pos >= length) {
                return CompletableFuture.completedFuture(Unpooled.EMPTY_BUFFER);
            }
            int n = (int) Math.min(len, length - pos);
            core.metrics().read(n);
            if (readahead == null) {
                return fetch(pos, n);
            }
            return readahead.read(pos, n, length, state.epoch.get(), state.writes::pending);
        });
    }

    private CompletableFuture<ByteBuf> fetch(long pos, int n) {
        if (!untracked()) {
            return ChunkIo.read(state.tier, state.inode, state.layout, pos, n, state.io(), core.alloc(), null);
        }
        AtomicBoolean hole = new AtomicBoolean();
        return ChunkIo.read(state.tier, state.inode, state.layout, pos, n, state.io(), core.alloc(), () -> hole.set(true))
                .thenCompose(b -> hole.get() ? stillThere(b) : CompletableFuture.completedFuture(b));
    }

    /**
     * {@code b} (owned), which has a hole, when the file still exists: nothing holds a file this
     * handle reads without a session, so another client's unlink frees it, and the collector then
     * removes its chunks; what reads as a hole may be such a removed chunk. Then the read fails
     * with STALE_HANDLE rather than answer zeros for the file's bytes.
     */
    private CompletableFuture<ByteBuf> stillThere(ByteBuf b) {
        return core.meta().getattrAsync(caller, state.inode).handle((a, e) -> {
            if (e == null) {
                return b;
            }
            b.release();
            StrataException se = StrataException.wrap(e);
            if (se.status() == Status.NOT_FOUND) {
                throw new StrataException(Status.STALE_HANDLE, state.inode + " was removed while open here for reading"
                        + " (by another client: a read-only open does not hold a file), and its data with it");
            }
            throw se;
        });
    }

    /** Reads into {@code dst} at {@code pos}; returns the bytes read, or -1 at the end of the file. */
    public int read(long pos, ByteBuffer dst) {
        int want = dst.remaining();
        ByteBuf b = Futures.join(readAsync(pos, want), core.config().ioTimeout().plusSeconds(1));
        try {
            int n = b.readableBytes();
            if (n == 0 && want > 0) {
                return -1;
            }
            int limit = dst.limit();
            dst.limit(dst.position() + n);
            b.getBytes(b.readerIndex(), dst);
            dst.limit(limit);
            return n;
        } finally {
            b.release();
        }
    }

    public int read(long pos, byte[] into, int off, int len) {
        return read(pos, ByteBuffer.wrap(into, off, len));
    }

    /** Readahead served from fetched units vs fetched on demand (tests, metrics). */
    long[] readaheadCounts() {
        return readahead == null ? new long[] {0, 0} : readahead.counts();
    }

    // ---- writes ----

    /**
     * Writes {@code data} (borrowed until the future completes) at {@code pos}. Completes when
     * the bytes are accepted: gathered, or at the tiers for large and strict writes. Durable
     * and visible to other clients after {@link #fsyncAsync} or close.
     */
    public CompletableFuture<Void> writeAsync(long pos, ByteBuf data) {
        long end;
        try {
            checkOpen();
            if (!writable) {
                throw new StrataException(Status.INVALID_ARGUMENT, "file " + state.inode + " is not open for writing");
            }
            end = pos + data.readableBytes();
            if (pos < 0 || end < pos) {
                throw new StrataException(Status.INVALID_ARGUMENT, "bad write position " + pos);
            }
            if ((end - 1) / state.layout.chunkSize() > ChunkId.MAX_INDEX) {
                throw new StrataException(Status.FILE_TOO_LARGE, "a write to " + end + " is past the largest file");
            }
        } catch (StrataException e) {
            return CompletableFuture.failedFuture(e);
        }
        if (data.readableBytes() == 0) {
            return CompletableFuture.completedFuture(null);
        }
        synchronized (this) {
            unpublishedEnd = Math.max(unpublishedEnd, end);
            wrote = true;
            writeSeq++;
        }
        core.metrics().written(data.readableBytes());
        // the epoch moves before the write is gathered and again after: a unit fetched by a
        // concurrent read in between carries an epoch that is stale by the time the write is visible
        state.bumpEpoch();
        if (content != null) {
            content.wrote(pos, data);
        }
        // a dropped copy (a file past its size, a write out of order) costs a write nothing more
        boolean keeping = kept != null && kept.live();
        if (keeping) {
            kept.wrote(pos, data);
        }
        CompletableFuture<Void> f = state.writes.write(pos, data);
        state.bumpEpoch();
        if (keeping) {
            f = f.whenComplete((v, e) -> {
                if (e != null) {
                    kept.drop();
                }
            });
        }
        return f;
    }

    public void write(long pos, ByteBuffer src) {
        int n = src.remaining();
        ByteBuf b = Unpooled.wrappedBuffer(src);
        Futures.join(writeAsync(pos, b), core.config().ioTimeout().plusSeconds(1));
        src.position(src.position() + n);
    }

    public void write(long pos, byte[] from, int off, int len) {
        write(pos, ByteBuffer.wrap(from, off, len));
    }

    // ---- truncate, fsync, close ----

    /**
     * Sets the length: bytes past it are dropped from every tier (so a later extension reads
     * zeros), then the namespace records the exact length and bumps the data version.
     */
    public CompletableFuture<Void> truncateAsync(long size) {
        try {
            checkOpen();
            if (!writable) {
                throw new StrataException(Status.INVALID_ARGUMENT, "file " + state.inode + " is not open for writing");
            }
        } catch (StrataException e) {
            return CompletableFuture.failedFuture(e);
        }
        if (content != null && size != content.length()) {
            content.forget();
        }
        if (kept != null) {
            kept.drop();
        }
        return core.truncate(caller, state, size).thenAccept(a -> { });
    }

    public void truncate(long size) {
        Futures.join(truncateAsync(size), core.config().ioTimeout().plus(core.config().metaTimeout()));
    }

    /** Makes every write so far durable at the policy's tier and publishes length and data version. */
    public CompletableFuture<Void> fsyncAsync() {
        try {
            checkOpen();
        } catch (StrataException e) {
            return CompletableFuture.failedFuture(e);
        }
        return publish(false).thenAccept(a -> { });
    }

    public void fsync() {
        Futures.join(fsyncAsync(), core.config().ioTimeout().plus(core.config().metaTimeout()));
    }

    /**
     * Sends gathered writes, flushes L1 write-back, then (if anything was written) publishes the
     * length through the namespace: fsync, or close when {@code end}. A failure drops the
     * handle's {@link WrittenCopy}.
     */
    private CompletableFuture<InodeAttrs> publish(boolean end) {
        CompletableFuture<InodeAttrs> p = publishing(end);
        // a write that failed (reported now, once) left bytes in the copy that no tier has
        return kept == null ? p : p.whenComplete((a, e) -> {
            if (e != null) {
                kept.drop();
            }
        });
    }

    private CompletableFuture<InodeAttrs> publishing(boolean end) {
        // the file's failed bytes stay for another handle here that still writes it
        return state.writes.flush(end && state.onlyWriter(this))
                .thenCompose(v -> state.tier.flushAsync(state.inode, state.io()))
                .thenCompose(v -> {
                    long seq;
                    long upTo;
                    boolean any;
                    synchronized (this) {
                        seq = writeSeq;
                        upTo = Math.max(0, unpublishedEnd);
                        any = wrote;
                    }
                    CompletableFuture<InodeAttrs> f;
                    if (end && untracked()) {
                        return CompletableFuture.completedFuture((InodeAttrs) null); // no session to end
                    } else if (end) {
                        f = core.meta().closeAsync(caller, state.inode, session, upTo, any, content == null ? Checkpoint.NO_CRC : content.crc(),
                                content == null ? 0 : content.length(), null);
                    } else if (any) {
                        f = core.meta().fsyncAsync(caller, state.inode, session, upTo, null);
                    } else {
                        return CompletableFuture.completedFuture((InodeAttrs) null);
                    }
                    return f.thenApply(a -> {
                        state.seen(a);
                        synchronized (this) {
                            boolean quiet = writeSeq == seq;
                            if (quiet) {
                                wrote = false;
                                unpublishedEnd = -1;
                            }
                            // under this handle's lock: a write that starts after this finds the
                            // new version's blocks in the cache and drops them as it lands
                            if (kept != null && a != null) {
                                kept.published(a.dataVersion(), any, quiet && state.onlyWriter(this), state.inode, state.layout.chunkSize(),
                                        state.io());
                            }
                        }
                        return a;
                    });
                });
    }

    /** For FUSE's flush (every close(2) of a descriptor): publish like fsync, keep the file open. */
    public CompletableFuture<Void> publishAsync() {
        return fsyncAsync();
    }

    /**
     * Publishes (as fsync) and ends the session. If the data could not be written, the session
     * ends without publishing and the future fails with that error.
     */
    public CompletableFuture<Void> closeAsync() {
        if (!closed.compareAndSet(false, true)) {
            return CompletableFuture.completedFuture(null);
        }
        CompletableFuture<Void> out = new CompletableFuture<>();
        publish(true).whenComplete((a, e) -> {
            if (e == null) {
                finish();
                out.complete(null);
                return;
            }
            // the data did not make it: end the session (if any) without publishing, report the error
            CompletableFuture<?> ended = untracked() ? CompletableFuture.completedFuture(null)
                    : core.meta().closeAsync(caller, state.inode, session, 0, false, null);
            ended.whenComplete((x, e2) -> {
                finish();
                out.completeExceptionally(StrataException.wrap(e));
            });
        });
        return out;
    }

    private void finish() {
        if (kept != null) {
            kept.drop();
        }
        if (untracked()) {
            core.untrackedClosed();
        }
        if (readahead != null) {
            readahead.close();
        }
        state.detach(this);
        core.release(state);
    }

    @Override
    public void close() {
        Futures.join(closeAsync(), core.config().ioTimeout().plus(core.config().metaTimeout()));
    }

    /** The namespace's attributes as the open (or create) of this handle answered them. */
    private volatile io.strata.protocol.meta.InodeAttrs openedAttrs;
    private volatile io.strata.protocol.meta.InodeAttrs createdIn;

    void opened(io.strata.protocol.meta.InodeAttrs a, io.strata.protocol.meta.InodeAttrs dir) {
        openedAttrs = a;
        createdIn = dir;
    }

    /**
     * For a handle opened with {@link OpenFlag#CREATE}: the directory the file was created (or
     * found) in, as the namespace answered right after the create. A client that keeps directory
     * attributes keeps these instead of asking again. Empty for other handles.
     */
    public java.util.Optional<FileStatus> dirAtCreate() {
        io.strata.protocol.meta.InodeAttrs d = createdIn;
        return d == null ? java.util.Optional.empty() : java.util.Optional.of(FileStatus.of(d));
    }

    /**
     * The attributes the open of this handle returned, with this client's length: what
     * {@link #statAsync} would answer right after the open, without a round trip (a FUSE create
     * is followed at once by the kernel asking for the new file's attributes). Empty when the
     * handle was not opened through {@link StrataFileSystem#openAsync}.
     */
    public java.util.Optional<FileStatus> statAtOpen() {
        io.strata.protocol.meta.InodeAttrs a = openedAttrs;
        return a == null ? java.util.Optional.empty() : java.util.Optional.of(FileStatus.of(a, state.length()));
    }

    /** Attributes of the file now (the namespace's, with this client's unpublished length). */
    public CompletableFuture<FileStatus> statAsync() {
        return core.meta().getattrAsync(caller, state.inode).thenApply(a -> {
            state.seen(a);
            return FileStatus.of(a, state.length());
        });
    }

    @Override
    public String toString() {
        return "StrataFile[" + state.inode + (writable ? ", rw" : ", r") + (closed.get() ? ", closed" : "") + "]";
    }
}
