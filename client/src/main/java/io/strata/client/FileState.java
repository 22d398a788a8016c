package io.strata.client;

import io.strata.config.policy.L2Mode;
import io.strata.core.InodeId;
import io.strata.core.tier.CachedCopies;
import io.strata.core.tier.IoOptions;
import io.strata.core.tier.Tier;
import io.strata.protocol.meta.InodeAttrs;
import io.strata.protocol.meta.Layout;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * What this client knows about one file it has open, shared by all the file's handles: layout
 * and policy (fixed at create), the tier it uses, the latest length and data version the
 * namespace reported, the writes in flight ({@link FileWrites}) and a write epoch that readahead
 * uses to drop units fetched before a local write or truncate.
 *
 * <p>{@link #length()} is what reads and {@code stat} see: the larger of the published length and
 * the furthest unpublished write of any open handle here.
 */
final class FileState {
    final InodeId inode;
    final Layout layout;
    final FilePolicy policy;
    final Tier tier;
    final FileWrites writes;
    final AtomicLong epoch = new AtomicLong();
    private final Duration ioTimeout;
    private final java.util.Optional<io.strata.core.tier.QosClass> jobQos;
    private final Set<StrataFile> handles = ConcurrentHashMap.newKeySet();
    private long metaLength;
    private long dataVersion;
    /** Where a prefetch put the file's chunks in L2, as the latest open here reported; null: nowhere. */
    private CachedCopies cached;
    private int refs;

    FileState(InodeAttrs a, FilePolicy policy, Tier tier, ClientCore core) {
        this.inode = a.id();
        this.layout = a.layout();
        this.policy = policy;
        this.tier = tier;
        this.ioTimeout = core.config().ioTimeout();
        this.jobQos = core.config().jobQos();
        int capacity = policy.strict() ? 0 : (int) core.config().writeBuffer().bytes();
        this.writes = new FileWrites(capacity, core.writeBudget(), core.alloc(),
                (pos, data) -> ChunkIo.write(tier, inode, layout, pos, data, io()));
        seen(a);
    }

    /** Takes the namespace's latest word on the file. */
    synchronized void seen(InodeAttrs a) {
        metaLength = a.length();
        dataVersion = Math.max(dataVersion, a.dataVersion());
    }

    /** The published length raised by this client's unpublished writes. */
    long length() {
        long l;
        synchronized (this) {
            l = metaLength;
        }
        for (StrataFile h : handles) {
            l = Math.max(l, h.unpublishedEnd());
        }
        return l;
    }

    synchronized long dataVersion() {
        return dataVersion;
    }

    /** An open's word on the file's prefetched copies (null: none at its data version then). */
    synchronized void cached(CachedCopies c) {
        cached = c;
    }

    /**
     * Options of every tier call for this file now: the prefetched copies only while they hold
     * the current data version, and never under {@code tiers.l2 = off}.
     */
    IoOptions io() {
        long dv;
        CachedCopies c;
        synchronized (this) {
            dv = dataVersion;
            c = cached;
        }
        IoOptions io = policy.io(dv, ioTimeout, jobQos);
        boolean l2 = policy.policy().l2() != L2Mode.OFF;
        return l2 && c != null && c.dataVersion() == dv ? io.withStage(io.stage().withCached(c)) : io;
    }

    /** A local write or truncate happened: readahead units fetched before it are stale. */
    void bumpEpoch() {
        epoch.incrementAndGet();
    }

    /** Every handle's unpublished end is cut to {@code size} (a truncate published it). */
    void truncated(long size) {
        for (StrataFile h : handles) {
            h.cutUnpublished(size);
        }
        bumpEpoch();
    }

    /** A tracked session that keeps the file for this client's untracked readers ({@link ClientCore#pin}). */
    record Pin(io.strata.protocol.meta.Caller caller, long session) {
    }

    private Pin pin;

    /** The caller of a handle that reads without a session, when the file is not pinned yet; else null. */
    synchronized io.strata.protocol.meta.Caller pinnable() {
        if (pin != null) {
            return null;
        }
        for (StrataFile h : handles) {
            if (h.untracked()) {
                return h.caller();
            }
        }
        return null;
    }

    /** Takes {@code p} unless the file is closed here or pinned already (false: the caller ends it). */
    synchronized boolean pin(Pin p) {
        if (refs <= 0 || pin != null) {
            return false;
        }
        pin = p;
        return true;
    }

    /** The pin, to end now that the last handle closed; null when there is none. */
    synchronized Pin takePin() {
        Pin p = pin;
        pin = null;
        return p;
    }

    /** Whether {@code h} is the only handle here open for writing. */
    boolean onlyWriter(StrataFile h) {
        for (StrataFile o : handles) {
            if (o != h && o.isWritable()) {
                return false;
            }
        }
        return true;
    }

    /**
     * Publishes what the handles here wrote and have not published yet. Before a change of the
     * file's times: a publish after it would set the modification time again (to when the
     * bytes were published), where the writes came first (tar's and cp -p's utimensat of a
     * descriptor they just wrote).
     */
    CompletableFuture<Void> publishWrites() {
        List<CompletableFuture<Void>> out = new ArrayList<>();
        for (StrataFile h : handles) {
            if (h.isWritable() && h.wroteSincePublish()) {
                out.add(h.publishAsync());
            }
        }
        return CompletableFuture.allOf(out.toArray(CompletableFuture[]::new));
    }

    /** Whether any handle here has the file open for writing (its size here may lead the namespace's). */
    boolean hasWriter() {
        for (StrataFile o : handles) {
            if (o.isWritable()) {
                return true;
            }
        }
        return false;
    }

    synchronized void attach(StrataFile h) {
        handles.add(h);
    }

    synchronized void detach(StrataFile h) {
        handles.remove(h);
    }

    synchronized int ref() {
        return ++refs;
    }

    synchronized int unref() {
        return --refs;
    }
}
