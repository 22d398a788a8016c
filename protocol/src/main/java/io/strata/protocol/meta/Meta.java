package io.strata.protocol.meta;

import io.strata.core.InodeId;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * The namespace operations, each one transaction. Implemented in-process by {@link MetaStore}
 * and remotely by the meta service's client ({@code io.strata.protocol.meta.MetaClient}), so
 * code written against this interface runs either way.
 *
 * <p>Failures complete the future with a {@link io.strata.core.StrataException} whose status is
 * errno-like (NOT_FOUND, ALREADY_EXISTS, NOT_A_DIRECTORY, IS_A_DIRECTORY, DIRECTORY_NOT_EMPTY,
 * PERMISSION_DENIED, NOT_PERMITTED, NAME_TOO_LONG, INVALID_NAME, ...); a failed operation has
 * written nothing. Read-write operations take a {@link RequestId}: retrying with the same id
 * (after a timeout, on another meta instance) applies the operation once and returns the first
 * result.
 */
public interface Meta {
    /** The child {@code name} of directory {@code parent} ("." and ".." allowed). Needs x on parent. */
    CompletableFuture<InodeAttrs> lookupAsync(Caller c, InodeId parent, String name);

    CompletableFuture<InodeAttrs> getattrAsync(Caller c, InodeId inode);

    /** An absolute path, following symlinks (at most 40); x needed on every directory passed. */
    CompletableFuture<InodeAttrs> resolveAsync(Caller c, String path);

    /**
     * Changes mode, owner, size or times. Mode: the owner or root; anyone who may write the file
     * may also only clear its set-user-ID and set-group-ID bits (what the kernel asks for after
     * a write or truncate by someone other than root). Size: write permission, or a
     * {@link Caller#session} opened for writing (ftruncate(2) of a descriptor). A size change by
     * anyone but the owner or root clears the set-user-ID bit, and the set-group-ID bit of a
     * group-executable file, as Linux does.
     */
    CompletableFuture<InodeAttrs> setattrAsync(Caller c, InodeId inode, SetAttr attrs, RequestId req);

    /**
     * Creates a regular file with its layout fixed from the parent's effective policy. When the
     * name exists: ALREADY_EXISTS if {@code exclusive}, else the existing file is returned.
     */
    CompletableFuture<InodeAttrs> createAsync(Caller c, InodeId parent, String name, int mode, boolean exclusive, RequestId req);

    /** Makes directory {@code name}; answers it and {@code parent} after the change. */
    CompletableFuture<InDir> mkdirInAsync(Caller c, InodeId parent, String name, int mode, RequestId req);

    default CompletableFuture<InodeAttrs> mkdirAsync(Caller c, InodeId parent, String name, int mode, RequestId req) {
        return mkdirInAsync(c, parent, name, mode, req).thenApply(InDir::attrs);
    }

    /** Makes symlink {@code name} to {@code target}; answers it and {@code parent} after the change. */
    CompletableFuture<InDir> symlinkInAsync(Caller c, InodeId parent, String name, String target, RequestId req);

    default CompletableFuture<InodeAttrs> symlinkAsync(Caller c, InodeId parent, String name, String target, RequestId req) {
        return symlinkInAsync(c, parent, name, target, req).thenApply(InDir::attrs);
    }

    CompletableFuture<String> readlinkAsync(Caller c, InodeId inode);

    /**
     * Creates a FIFO, socket, character or block device ({@code type}): a name with a mode, an
     * owner, times and, for a device, its number {@code rdev} ({@link DeviceNumber}; 0 for a FIFO
     * or socket), and no data. Devices need root (NOT_PERMITTED otherwise, as mknod(2) without
     * CAP_MKNOD); FIFOs and sockets need write and search permission on the parent, as any
     * create does. Other types: INVALID_ARGUMENT (they have create, mkdir and symlink).
     */
    CompletableFuture<InodeAttrs> mknodAsync(Caller c, InodeId parent, String name, InodeType type, int mode, long rdev,
                                             RequestId req);

    /** A new name for a file or symlink (directories: NOT_PERMITTED). */
    CompletableFuture<InodeAttrs> linkAsync(Caller c, InodeId inode, InodeId newParent, String newName, RequestId req);

    /** Removes a non-directory's name; answers the directory's attributes after the removal. */
    CompletableFuture<InodeAttrs> unlinkAsync(Caller c, InodeId parent, String name, RequestId req);

    /** Removes an empty directory; answers its parent's attributes after the removal. */
    CompletableFuture<InodeAttrs> rmdirAsync(Caller c, InodeId parent, String name, RequestId req);

    /**
     * Moves {@code srcParent/srcName} to {@code dstParent/dstName} atomically, replacing a target
     * as POSIX rename(2) does (unless {@code noReplace}); a directory cannot move into its own
     * subtree (INVALID_ARGUMENT).
     */
    CompletableFuture<Void> renameAsync(Caller c, InodeId srcParent, String srcName, InodeId dstParent, String dstName,
                                        boolean noReplace, RequestId req);

    /** Up to {@code limit} entries after name {@code after} (null: from the start). */
    CompletableFuture<DirPage> readdirAsync(Caller c, InodeId dir, String after, int limit, boolean withAttrs);

    /**
     * Opens a file ({@link OpenFlags}); the session keeps an unlinked file's data until closed.
     * A read-only open (flags {@link OpenFlags#READ} alone) of a file outside committed checkpoint
     * generations is not tracked: it checks access and answers the file as it is now with
     * session 0, and writes nothing, so an unlink elsewhere frees the file at once.
     */
    CompletableFuture<OpenResult> openAsync(Caller c, InodeId inode, int flags, long clientId, RequestId req);

    /**
     * open(2) with O_CREAT, in one transaction: creates the regular file {@code name} in
     * {@code parent} as {@link #createAsync} does (ALREADY_EXISTS when it exists and
     * {@code exclusive}; IS_A_DIRECTORY when a directory has the name), then opens it with
     * {@code flags} as {@link #openAsync} does. Access is checked against the file's mode only
     * when it existed before: a file this call created is opened as asked whatever mode it was
     * given (a file created with mode 0 is writable through the session that created it). The
     * result's {@link OpenResult#dir} is {@code parent} after the create.
     */
    CompletableFuture<OpenResult> createOpenAsync(Caller c, InodeId parent, String name, int mode, boolean exclusive, int flags,
                                                  long clientId, RequestId req);

    /**
     * Ends a session. When {@code wrote}, the file's length becomes the larger of its length and
     * {@code writtenLength} (the end of the furthest byte this session wrote) and dataVersion is
     * bumped; writes published by anyone but the owner or root clear the set-user-ID bit, and
     * the set-group-ID bit of a group-executable file, as a write(2) on Linux does. Returns the
     * attributes after the close.
     */
    default CompletableFuture<InodeAttrs> closeAsync(Caller c, InodeId inode, long session, long writtenLength, boolean wrote, RequestId req) {
        return closeAsync(c, inode, session, writtenLength, wrote, Checkpoint.NO_CRC, 0, req);
    }

    /**
     * Close with the CRC32C of bytes {@code [0, crcLength)} as this session wrote them ({@link
     * Checkpoint#NO_CRC} when it did not write them all, once each): the namespace keeps it as the
     * file's content checksum when that is the whole file and no other session wrote meanwhile, so
     * a checkpoint manifest carries it without anyone re-reading the file.
     */
    CompletableFuture<InodeAttrs> closeAsync(Caller c, InodeId inode, long session, long writtenLength, boolean wrote, long contentCrc,
                                             long crcLength, RequestId req);

    /** Publishes writes like close, keeping the session open. */
    CompletableFuture<InodeAttrs> fsyncAsync(Caller c, InodeId inode, long session, long writtenLength, RequestId req);

    /**
     * Client {@code clientId} (the id its opens carry) is alive: the namespace keeps its open
     * sessions for another lease. A client that stops calling (it crashed, its node died) has its
     * sessions ended once the lease has passed since its last call, or since a session's open
     * when it never called: nothing they wrote is published, unlinked files they held are freed.
     * Completes with the lease, so that a client calls often enough (a few times per lease).
     */
    CompletableFuture<java.time.Duration> keepAliveAsync(Caller c, long clientId);

    CompletableFuture<StatFs> statfsAsync(Caller c);

    CompletableFuture<byte[]> getxattrAsync(Caller c, InodeId inode, String name);

    CompletableFuture<Void> setxattrAsync(Caller c, InodeId inode, String name, byte[] value, int flags, RequestId req);

    CompletableFuture<List<String>> listxattrAsync(Caller c, InodeId inode);

    CompletableFuture<Void> removexattrAsync(Caller c, InodeId inode, String name, RequestId req);

    /** The directory's own overrides and every field's effective value and source. */
    CompletableFuture<PolicyInfo> policyGetAsync(Caller c, InodeId dir);

    /**
     * Changes the directory's overrides ("key=value", "key=inherit" to drop one); only its owner
     * or root. Applies to files created afterwards; existing files keep their layout.
     */
    CompletableFuture<PolicyInfo> policySetAsync(Caller c, InodeId dir, List<String> assignments, RequestId req);

    // ---- L2 staging (docs/internals/l2.md) ----

    /**
     * The staging record of a file about to be written under {@code tiers.l2 = stage}: the current
     * one while it has undrained data, else a new epoch over {@code proposed} candidates.
     */
    CompletableFuture<Staging> stageOpenAsync(Caller c, InodeId inode, int placementVersion, int replicas, List<Staging.Candidate> proposed,
                                              RequestId req);

    /** The file's staging record; empty when it was never staged. */
    CompletableFuture<java.util.Optional<Staging>> stagingAsync(Caller c, InodeId inode);

    /** Merges a writer's publish into epoch {@code epoch} of the record (STALE_... when the epoch is over: NOT_FOUND). */
    CompletableFuture<Staging> stagePublishAsync(Caller c, InodeId inode, long epoch, Staging.Delta delta, RequestId req);

    /** An agent's drain report about publish {@code version} of epoch {@code epoch}: begun, or (with {@code durable}) done. */
    CompletableFuture<Staging> drainReportAsync(Caller c, InodeId inode, long epoch, long version, boolean durable, RequestId req);

    /** Marks the file lost (every copy of an undrained chunk is gone). */
    CompletableFuture<Staging> stageLostAsync(Caller c, InodeId inode, String why, RequestId req);

    /** Up to {@code limit} staging records after inode {@code after} (0: from the first); with {@code pendingOnly}, undrained or lost ones. */
    CompletableFuture<List<Staging>> listStagingAsync(Caller c, boolean pendingOnly, long after, int limit);

    // ---- checkpoint generations (docs/checkpoints.md) ----

    /**
     * Commits generation directory {@code gen} (a direct child of a checkpoint root) in one
     * transaction: every file closed (FILE_BUSY when one is open for writing), every
     * {@code expected} file present with its size (NOT_FOUND, INVALID_ARGUMENT), then the manifest
     * and the generation's commit order are written and its tree becomes read-only. Committing a
     * committed generation again answers it as it is. Returns at once; the level is waited for by
     * polling {@link #ckptStatusAsync}.
     */
    CompletableFuture<Checkpoint.Generation> ckptCommitAsync(Caller c, InodeId gen, Checkpoint.Level level,
                                                             List<Checkpoint.Expected> expected, RequestId req);

    /** A generation (committed or being written) with its durability now. */
    CompletableFuture<Checkpoint.Generation> ckptStatusAsync(Caller c, InodeId gen);

    /** Every generation of checkpoint root {@code root} known to the namespace, committed ones in commit order, then the others. */
    CompletableFuture<List<Checkpoint.Generation>> ckptListAsync(Caller c, InodeId root);

    /** Up to {@code limit} manifest entries of committed generation {@code gen} after path {@code after} ("" from the first). */
    CompletableFuture<Checkpoint.ManifestPage> ckptManifestAsync(Caller c, InodeId gen, String after, int limit);

    /** Pins (retention never removes it) or unpins a committed generation. */
    CompletableFuture<Checkpoint.Generation> ckptPinAsync(Caller c, InodeId gen, boolean pin, RequestId req);

    // ---- prefetched files (docs/scheduler-hooks.md) ----

    /**
     * Records {@code files} as held in L2 for hint {@code owner}, their chunks placed among
     * {@code agents}. A file already recorded at the same data version keeps its agents and gains
     * the owner; a file whose data version is no longer the one given is left alone and listed
     * as stale (its copies hold old bytes).
     */
    CompletableFuture<Cached.Marked> cacheMarkAsync(Caller c, long owner, List<Integer> agents, List<Cached.File> files, RequestId req);

    /** Hint {@code owner} lets go of {@code files}; a record left with no owner is removed. */
    CompletableFuture<Void> cacheUnmarkAsync(Caller c, long owner, List<InodeId> files, RequestId req);

    /** The records of those of {@code files} that have one. */
    CompletableFuture<List<Cached.Record>> cachedAsync(Caller c, List<InodeId> files);
}
