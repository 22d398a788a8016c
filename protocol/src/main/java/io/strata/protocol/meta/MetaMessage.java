package io.strata.protocol.meta;

import io.strata.core.InodeId;
import io.strata.core.rpc.Message;
import java.util.Arrays;
import java.util.List;
import java.util.Map;

/**
 * Messages of the meta service (wire tags 300-399: requests 300-349, replies 350-399), one per
 * {@link io.strata.protocol.meta.Meta} operation. Every read-write request carries the
 * {@link RequestId} that makes its retries safe. Codecs are in {@link MetaMessages}.
 */
public sealed interface MetaMessage extends Message {
    record Lookup(Caller caller, InodeId parent, String name) implements MetaMessage {
    }

    record GetAttr(Caller caller, InodeId inode) implements MetaMessage {
    }

    record Resolve(Caller caller, String path) implements MetaMessage {
    }

    record SetAttrs(Caller caller, InodeId inode, SetAttr attrs, RequestId req) implements MetaMessage {
    }

    record Create(Caller caller, InodeId parent, String name, int mode, boolean exclusive, RequestId req) implements MetaMessage {
    }

    record Mkdir(Caller caller, InodeId parent, String name, int mode, RequestId req) implements MetaMessage {
    }

    record Symlink(Caller caller, InodeId parent, String name, String target, RequestId req) implements MetaMessage {
    }

    record ReadLink(Caller caller, InodeId inode) implements MetaMessage {
    }

    record Link(Caller caller, InodeId inode, InodeId newParent, String newName, RequestId req) implements MetaMessage {
    }

    record Unlink(Caller caller, InodeId parent, String name, RequestId req) implements MetaMessage {
    }

    record Rmdir(Caller caller, InodeId parent, String name, RequestId req) implements MetaMessage {
    }

    /**
     * unlink ({@code directory} false) or rmdir: {@link Unlink} or {@link Rmdir} answered with the
     * directory's attributes after the removal ({@link Attrs}) instead of {@link Done}, so a
     * client keeping directory attributes need not look the directory up again.
     */
    record Remove(Caller caller, InodeId parent, String name, boolean directory, RequestId req) implements MetaMessage {
    }

    record Rename(Caller caller, InodeId srcParent, String srcName, InodeId dstParent, String dstName, boolean noReplace,
                  RequestId req) implements MetaMessage {
    }

    /** {@code after} "" lists from the start. */
    record ReadDir(Caller caller, InodeId dir, String after, int limit, boolean withAttrs) implements MetaMessage {
    }

    record Open(Caller caller, InodeId inode, int flags, long clientId, RequestId req) implements MetaMessage {
    }

    /** {@code contentCrc}: CRC32C of bytes {@code [0, crcLength)} as this session wrote them, {@link Checkpoint#NO_CRC} when not known. */
    record Close(Caller caller, InodeId inode, long session, long writtenLength, boolean wrote, long contentCrc, long crcLength, RequestId req)
            implements MetaMessage {
    }

    record Fsync(Caller caller, InodeId inode, long session, long writtenLength, RequestId req) implements MetaMessage {
    }

    record StatFsRequest(Caller caller) implements MetaMessage {
    }

    record GetXattr(Caller caller, InodeId inode, String name) implements MetaMessage {
    }

    record SetXattr(Caller caller, InodeId inode, String name, byte[] value, int flags, RequestId req) implements MetaMessage {
        @Override
        public boolean equals(Object o) {
            return o instanceof SetXattr s && s.caller.equals(caller) && s.inode.equals(inode) && s.name.equals(name)
                    && Arrays.equals(s.value, value) && s.flags == flags && s.req.equals(req);
        }

        @Override
        public int hashCode() {
            return inode.hashCode() * 31 + name.hashCode() + Arrays.hashCode(value);
        }
    }

    record ListXattr(Caller caller, InodeId inode) implements MetaMessage {
    }

    record RemoveXattr(Caller caller, InodeId inode, String name, RequestId req) implements MetaMessage {
    }

    record PolicyGet(Caller caller, InodeId dir) implements MetaMessage {
    }

    record PolicySet(Caller caller, InodeId dir, List<String> assignments, RequestId req) implements MetaMessage {
    }

    /** A FIFO, socket or device ({@code rdev}: a device's number, else 0). */
    record Mknod(Caller caller, InodeId parent, String name, InodeType type, int mode, long rdev, RequestId req) implements MetaMessage {
    }

    /**
     * A setattr acting through the open session {@code caller.session()} (non-zero), as
     * ftruncate(2) through a descriptor: {@link SetAttrs} with the session, the only request
     * whose caller's session travels.
     */
    record SetAttrsThrough(Caller caller, InodeId inode, SetAttr attrs, RequestId req) implements MetaMessage {
    }

    /** open(2) with O_CREAT: creates or finds a regular file and opens it, in one transaction. */
    record CreateOpen(Caller caller, InodeId parent, String name, int mode, boolean exclusive, int flags, long clientId,
                      RequestId req) implements MetaMessage {
    }

    /** {@code request} answered with {@link AttrsIn}: the new directory and its parent after the change. */
    record MkdirIn(Mkdir request) implements MetaMessage {
    }

    /** {@code request} answered with {@link AttrsIn}: the new symlink and its directory after the change. */
    record SymlinkIn(Symlink request) implements MetaMessage {
    }

    /** {@code request} answered with {@link OpenedIn}: the session and the directory's attributes after the create. */
    record CreateOpenIn(CreateOpen request) implements MetaMessage {
    }

    // ---- L2 staging (docs/internals/l2.md) ----

    /** Writer, opening a staged file for writing: its staging record, a new epoch over {@code proposed} when it has nothing undrained. */
    record StageOpen(Caller caller, InodeId inode, int placementVersion, int replicas, List<Staging.Candidate> proposed, RequestId req) implements MetaMessage {
        public StageOpen {
            proposed = List.copyOf(proposed);
        }
    }

    /** Reader: the file's staging record, if it has one. */
    record GetStaging(Caller caller, InodeId inode) implements MetaMessage {
    }

    /** Writer, at fsync or close: what it staged in epoch {@code epoch}. */
    record StagePublish(Caller caller, InodeId inode, long epoch, Staging.Delta delta, RequestId req) implements MetaMessage {
    }

    /** L2 agent: the drain of publish {@code version} of epoch {@code epoch} has begun, or (with {@code durable}) is done. */
    record DrainReport(Caller caller, InodeId inode, long epoch, long version, boolean durable, RequestId req) implements MetaMessage {
    }

    /** Whoever finds every copy of an undrained chunk gone: the file is lost, {@code why}. */
    record StageLost(Caller caller, InodeId inode, String why, RequestId req) implements MetaMessage {
    }

    /** Tools: staging records after inode {@code after} (0: from the first), undrained or lost ones only when {@code pendingOnly}. */
    record ListStaging(Caller caller, boolean pendingOnly, long after, int limit) implements MetaMessage {
    }

    // ---- checkpoint generations (docs/checkpoints.md) ----

    /**
     * One checkpoint operation on generation or root {@code inode}: {@code level} and
     * {@code expected} for COMMIT, {@code after} and {@code limit} for MANIFEST.
     */
    record Ckpt(Caller caller, Checkpoint.Op op, InodeId inode, Checkpoint.Level level, List<Checkpoint.Expected> expected,
                String after, int limit, RequestId req) implements MetaMessage {
        public Ckpt {
            expected = List.copyOf(expected);
        }
    }

    /** A prefetch's files in L2 ({@link Cached}): mark them held for {@code owner} among {@code agents}, unmark, or get their records. */
    record Cache(Caller caller, Cached.Op op, long owner, List<Integer> agents, List<Cached.File> files, RequestId req)
            implements MetaMessage {
        public Cache {
            agents = List.copyOf(agents);
            files = List.copyOf(files);
        }
    }

    /** Generations (one for COMMIT, STATUS and PIN), or a manifest page ({@code more} when entries follow). */
    record CkptReply(List<Checkpoint.Generation> generations, List<Checkpoint.Entry> entries, boolean more) implements MetaMessage {
        public CkptReply {
            generations = List.copyOf(generations);
            entries = List.copyOf(entries);
        }
    }

    /** {@code records}: the files' records (GET, MARK); {@code stale}: files MARK left alone because their data version moved on. */
    record CacheReply(List<Cached.Record> records, List<InodeId> stale) implements MetaMessage {
        public CacheReply {
            records = List.copyOf(records);
            stale = List.copyOf(stale);
        }
    }

    // ---- replies ---------------------------------------------------------------------------

    record Attrs(InodeAttrs attrs) implements MetaMessage {
    }

    /**
     * Client {@code clientId} is alive: its open sessions are kept for another lease (see
     * docs/internals/keyspace.md, "Client leases"). Carries no request id: repeating it is harmless.
     */
    record KeepAlive(Caller caller, long clientId) implements MetaMessage {
    }

    record Done() implements MetaMessage {
    }

    /** The answer to {@link KeepAlive}: how long the meta service keeps a silent client's sessions. */
    record LeaseReply(long leaseMillis) implements MetaMessage {
    }

    record LinkTarget(String target) implements MetaMessage {
    }

    /** {@code next} "" when the listing is complete. */
    record Listing(List<DirEntry> entries, String next) implements MetaMessage {
    }

    /** {@code cached}: the file's prefetched L2 copies at its data version, or null. */
    record Opened(long session, InodeAttrs attrs, io.strata.core.tier.CachedCopies cached) implements MetaMessage {
    }

    /** A new entry's attributes and its directory's after the change ({@link InDir}). */
    record AttrsIn(InodeAttrs attrs, InodeAttrs dir) implements MetaMessage {
    }

    /** {@link Opened}, and {@code dir}: the attributes of the directory the file was created or found in, after the create. */
    record OpenedIn(Opened opened, InodeAttrs dir) implements MetaMessage {
    }

    record StatFsReply(long inodes, long bytes) implements MetaMessage {
    }

    record XattrValue(byte[] value) implements MetaMessage {
        @Override
        public boolean equals(Object o) {
            return o instanceof XattrValue x && Arrays.equals(x.value, value);
        }

        @Override
        public int hashCode() {
            return Arrays.hashCode(value);
        }
    }

    record XattrNames(List<String> names) implements MetaMessage {
    }

    record PolicyReply(String path, Map<String, String> overrides, List<PolicyInfo.Field> effective) implements MetaMessage {
    }

    /** A staging record, or none ({@code staging} null) for a file that was never staged. */
    record StagingReply(Staging staging) implements MetaMessage {
    }

    /** A page of staging records; {@code more} when more follow the last one's inode. */
    record StagingList(List<Staging> records, boolean more) implements MetaMessage {
        public StagingList {
            records = List.copyOf(records);
        }
    }
}
