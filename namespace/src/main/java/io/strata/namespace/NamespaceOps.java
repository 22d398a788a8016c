package io.strata.namespace;

import io.strata.protocol.meta.Caller;
import io.strata.protocol.meta.Codec;
import io.strata.protocol.meta.DirEntry;
import io.strata.protocol.meta.DirPage;
import io.strata.protocol.meta.InDir;
import io.strata.protocol.meta.InodeAttrs;
import io.strata.protocol.meta.InodeType;
import io.strata.protocol.meta.Layout;
import io.strata.protocol.meta.Names;
import io.strata.protocol.meta.OpenFlags;
import io.strata.protocol.meta.OpenResult;
import io.strata.protocol.meta.PolicyInfo;
import io.strata.protocol.meta.SetAttr;
import io.strata.protocol.meta.StatFs;
import static io.strata.namespace.Permissions.R;
import static io.strata.namespace.Permissions.W;
import static io.strata.namespace.Permissions.X;

import io.strata.config.policy.Consistency;
import io.strata.config.policy.Policy;
import io.strata.config.policy.PolicyField;
import io.strata.config.policy.PolicyOverrides;
import io.strata.config.policy.PolicyResolver;
import io.strata.core.InodeId;
import io.strata.core.Status;
import io.strata.core.StrataException;
import io.strata.namespace.kv.Bytes;
import io.strata.namespace.kv.KeyValue;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Deque;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * The bodies of the namespace operations: each runs inside one transaction ({@link NsTx}) and
 * either completes or throws with nothing written. Bodies may run more than once (conflict
 * retries); {@link MetaStore} wraps the read-write ones in idempotency records.
 *
 * <p>Conflict design: an operation reads (with conflicts) every inode and entry whose state it
 * depends on, so concurrent operations serialize; a directory's change time is kept in a
 * separate key updated with an atomic max, so creating many files in one directory at once does
 * not make those creates conflict with each other.
 */
final class NamespaceOps {
    static final int MAX_LINKS = 65_000;
    static final int MAX_SYMLINK_HOPS = 40;
    static final int MAX_DEPTH = 4096;
    static final int MAX_PAGE = 10_000;

    static final int POLICY_CACHE_SIZE = 4096;

    private final ChainTables tables;
    private final Policy basePolicy;
    /**
     * Resolved policies by the exact (path, overrides) levels they came from: a pure function of
     * its key, so a hit is always right; it saves re-parsing every field on each create.
     */
    private final java.util.concurrent.ConcurrentHashMap<List<PolicyResolver.Level>, PolicyResolver.Effective> resolved =
            new java.util.concurrent.ConcurrentHashMap<>();

    NamespaceOps(ChainTables tables, Policy basePolicy) {
        this.tables = tables;
        this.basePolicy = basePolicy;
    }

    // ---- lookups ---------------------------------------------------------------------------

    InodeAttrs lookup(NsTx t, Caller c, InodeId parent, String name) {
        Names.checkChars(name, "name");
        InodeAttrs dir = t.requireDir(parent);
        Permissions.check(c, dir, X, "lookup");
        if (name.equals(".")) {
            return t.attrs(parent);
        }
        if (name.equals("..")) {
            return t.attrs(dir.parent() == null ? parent : dir.parent());
        }
        NsTx.Dentry d = t.dentry(parent, name);
        if (d == null) {
            throw new StrataException(Status.NOT_FOUND, "no entry \"" + Names.printable(name) + "\" in " + parent);
        }
        return t.attrs(d.child());
    }

    InodeAttrs resolve(NsTx t, Caller c, String path) {
        if (path == null || !path.startsWith("/")) {
            throw new StrataException(Status.INVALID_ARGUMENT, "not an absolute path: \"" + path + "\"");
        }
        Deque<String> parts = new ArrayDeque<>(split(path));
        InodeAttrs cur = t.requireInode(InodeId.ROOT);
        int hops = 0;
        while (!parts.isEmpty()) {
            String name = parts.pollFirst();
            if (!cur.isDirectory()) {
                throw new StrataException(Status.NOT_A_DIRECTORY, "\"" + path + "\": a component is not a directory (" + cur.id() + ")");
            }
            InodeAttrs next = lookup(t, c, cur.id(), name);
            if (next.type() == InodeType.SYMLINK) {
                if (++hops > MAX_SYMLINK_HOPS) {
                    throw new StrataException(Status.SYMLINK_LOOP, "\"" + path + "\": more than " + MAX_SYMLINK_HOPS + " symlinks");
                }
                List<String> target = split(next.symlinkTarget());
                for (int i = target.size() - 1; i >= 0; i--) {
                    parts.addFirst(target.get(i));
                }
                if (next.symlinkTarget().startsWith("/")) {
                    cur = t.requireInode(InodeId.ROOT);
                }
                continue;
            }
            cur = next;
        }
        return t.attrs(cur.id());
    }

    private static List<String> split(String path) {
        List<String> out = new ArrayList<>();
        for (String p : path.split("/")) {
            if (!p.isEmpty() && !p.equals(".")) {
                out.add(p);
            }
        }
        return out;
    }

    String readlink(NsTx t, Caller c, InodeId inode) {
        InodeAttrs a = t.requireInode(inode);
        if (a.type() != InodeType.SYMLINK) {
            throw new StrataException(Status.INVALID_ARGUMENT, inode + " is not a symlink");
        }
        return a.symlinkTarget();
    }

    DirPage readdir(NsTx t, Caller c, InodeId dir, String after, int limit, boolean withAttrs) {
        if (limit < 1 || limit > MAX_PAGE) {
            throw new StrataException(Status.INVALID_ARGUMENT, "readdir limit must be 1.." + MAX_PAGE + ", got " + limit);
        }
        InodeAttrs d = t.requireDir(dir);
        Permissions.check(c, d, R, "readdir");
        byte[] prefix = KeySpace.under(KeySpace.DENTRY, dir);
        byte[] begin = after == null || after.isEmpty() ? prefix : Bytes.keyAfter(KeySpace.dentry(dir, after));
        List<KeyValue> kvs = t.reader.getRange(begin, Bytes.strinc(prefix), limit);
        List<DirEntry> out = new ArrayList<>(kvs.size());
        for (KeyValue kv : kvs) {
            InodeId child = InodeId.of(Bytes.readLe64(kv.value(), 0, 8));
            InodeType type = NsTx.typeOf(kv.value()[8]);
            out.add(new DirEntry(KeySpace.nameAt(kv.key()), child, type, withAttrs ? t.attrs(child) : null));
        }
        String next = out.size() == limit ? out.get(out.size() - 1).name() : null;
        return new DirPage(out, next);
    }

    StatFs statfs(NsTx t) {
        return new StatFs(Bytes.readLe64(t.reader.get(KeySpace.STAT_INODES)), Bytes.readLe64(t.reader.get(KeySpace.STAT_BYTES)));
    }

    // ---- creation --------------------------------------------------------------------------

    /** The parent of a new entry: a directory the caller may write and search, where the name is free. */
    private InodeAttrs parentForCreate(NsTx t, Caller c, InodeId parent, String name, String what) {
        Names.check(name);
        InodeAttrs dir = t.requireDir(parent);
        if (dir.nlink() == 0) {
            throw new StrataException(Status.NOT_FOUND, what + ": directory " + parent + " was removed");
        }
        Permissions.check(c, dir, W | X, what);
        CheckpointOps.checkMutable(t, parent, what);
        return dir;
    }

    private int newGid(Caller c, InodeAttrs dir) {
        return (dir.mode() & Permissions.SETGID) != 0 ? dir.gid() : c.gid();
    }

    private static StrataException exists(String name, InodeId parent) {
        return new StrataException(Status.ALREADY_EXISTS, "\"" + Names.printable(name) + "\" exists in " + parent);
    }

    private static void requireFree(NsTx t, InodeId parent, String name) {
        if (t.dentry(parent, name) != null) {
            throw exists(name, parent);
        }
    }

    /** Stores new inode {@code a} under {@code name} in {@code parent}: its entry, the parent's times, the inode count. */
    private static InodeAttrs insert(NsTx t, InodeId parent, String name, InodeAttrs a) {
        t.putInode(a);
        t.putDentry(parent, name, a.id(), a.type());
        t.touchDir(parent);
        t.countInodes(1);
        return a;
    }

    InodeAttrs create(NsTx t, Caller c, InodeId parent, String name, int mode, boolean exclusive, InodeId newId) {
        return createFile(t, c, parent, name, mode, exclusive, newId).attrs();
    }

    /** A regular file {@link #createFile} made ({@code created}) or found. */
    record Created(InodeAttrs attrs, boolean created) {
    }

    /**
     * A name that exists is looked up, as open(2) with O_CREAT does: search permission on the
     * parent is enough to find it (and to be told it exists); only a new name needs write
     * permission there.
     */
    private Created createFile(NsTx t, Caller c, InodeId parent, String name, int mode, boolean exclusive, InodeId newId) {
        Names.checkMode(mode);
        Names.check(name);
        Permissions.check(c, t.requireDir(parent), X, "create");
        NsTx.Dentry existing = t.dentry(parent, name);
        if (existing != null) {
            if (exclusive) {
                throw exists(name, parent);
            }
            InodeAttrs a = t.requireInode(existing.child());
            if (a.isDirectory()) {
                throw new StrataException(Status.IS_A_DIRECTORY, "\"" + Names.printable(name) + "\" is a directory");
            }
            return new Created(a, false);
        }
        InodeAttrs dir = parentForCreate(t, c, parent, name, "create");
        PolicyResolver.Effective eff = effectivePolicy(t, dir);
        Policy p = eff.policy();
        ChainTables.Table table = tables.latest(p.replicas()).orElseThrow(() -> new StrataException(Status.UNSUPPORTED,
                "no chain table with " + p.replicas() + " replicas (configure [[meta.chain-tables]] or run a cluster manager)"));
        Layout layout = ChainChooser.choose(newId, table, (int) p.chunkSize().bytes(), p.stripeWidth());
        Map<String, String> fixed = new LinkedHashMap<>();
        for (PolicyResolver.Source s : eff.sources()) {
            fixed.put(s.field().key(), s.value());
        }
        InodeAttrs a = new InodeAttrs(newId, InodeType.FILE, mode, c.uid(), newGid(c, dir), 1, 0, 1, t.now, t.now, t.now,
                null, "", "", layout, fixed, 0, 0);
        return new Created(insert(t, parent, name, a), true);
    }

    /** Makes directory {@code name}; answers it and {@code parent} after. */
    InDir mkdir(NsTx t, Caller c, InodeId parent, String name, int mode, InodeId newId) {
        Names.checkMode(mode);
        InodeAttrs dir = parentForCreate(t, c, parent, name, "mkdir");
        requireFree(t, parent, name);
        InodeAttrs before = t.attrs(parent); // before its subdirectory count moves
        int m = (dir.mode() & Permissions.SETGID) != 0 ? mode | Permissions.SETGID : mode;
        InodeAttrs a = new InodeAttrs(newId, InodeType.DIRECTORY, m, c.uid(), newGid(c, dir), NsTx.COUNTED_DIR_LINKS, 0, 1,
                t.now, t.now, t.now, parent, name, "", null, Map.of(), 0, 0);
        t.countSubdir(dir, 1);
        CheckpointOps.madeDir(t, dir, a, t.now / 1_000_000);
        return new InDir(insert(t, parent, name, a), t.touched(before, 1));
    }

    /** Makes symlink {@code name}; answers it and {@code parent} after. */
    InDir symlink(NsTx t, Caller c, InodeId parent, String name, String target, InodeId newId) {
        Names.checkSymlinkTarget(target);
        InodeAttrs dir = parentForCreate(t, c, parent, name, "symlink");
        requireFree(t, parent, name);
        InodeAttrs a = new InodeAttrs(newId, InodeType.SYMLINK, 0777, c.uid(), newGid(c, dir), 1,
                target.getBytes(java.nio.charset.StandardCharsets.UTF_8).length, 1, t.now, t.now, t.now, null, "", target,
                null, Map.of(), 0, 0);
        InodeAttrs before = t.attrs(parent);
        return new InDir(insert(t, parent, name, a), t.touched(before, 0));
    }

    /**
     * A FIFO, socket or device: type, mode, owner, times and a device's number, no data. Devices
     * need root, as mknod(2) needs CAP_MKNOD for them.
     */
    InodeAttrs mknod(NsTx t, Caller c, InodeId parent, String name, InodeType type, int mode, long rdev, InodeId newId) {
        Names.checkMode(mode);
        if (type == null || !type.isSpecial()) {
            throw new StrataException(Status.INVALID_ARGUMENT, "mknod makes FIFOs, sockets and devices, not a " + type
                    + " (files come from create, directories from mkdir, symlinks from symlink)");
        }
        if (!type.isDevice() && rdev != 0) {
            throw new StrataException(Status.INVALID_ARGUMENT, "mknod: a " + type + " has no device number (got " + rdev + ")");
        }
        if (type.isDevice() && !c.isRoot()) {
            throw new StrataException(Status.NOT_PERMITTED, "mknod: only root may create a device, not " + c);
        }
        InodeAttrs dir = parentForCreate(t, c, parent, name, "mknod");
        requireFree(t, parent, name);
        InodeAttrs a = new InodeAttrs(newId, type, mode, c.uid(), newGid(c, dir), 1, 0, 1, t.now, t.now, t.now, null, "", "",
                null, Map.of(), 0, rdev);
        return insert(t, parent, name, a);
    }

    InodeAttrs link(NsTx t, Caller c, InodeId inode, InodeId newParent, String newName) {
        InodeAttrs dir = parentForCreate(t, c, newParent, newName, "link");
        InodeAttrs a = t.requireInode(inode);
        if (a.isDirectory()) {
            throw new StrataException(Status.NOT_PERMITTED, "link: " + inode + " is a directory");
        }
        if (a.nlink() == 0) {
            throw new StrataException(Status.NOT_FOUND, "link: " + inode + " was unlinked");
        }
        if (a.nlink() >= MAX_LINKS) {
            throw new StrataException(Status.TOO_MANY_LINKS, "link: " + inode + " has " + a.nlink() + " links");
        }
        requireFree(t, newParent, newName);
        InodeAttrs linked = a.withNlink(a.nlink() + 1, t.now);
        t.putInode(linked);
        t.putDentry(dir.id(), newName, inode, a.type());
        t.touchDir(newParent);
        return linked;
    }

    // ---- removal ---------------------------------------------------------------------------

    /** Removes {@code name}, a non-directory; answers {@code parent}'s attributes after. */
    InodeAttrs unlink(NsTx t, Caller c, InodeId parent, String name, long nowMillis) {
        Names.check(name);
        InodeAttrs dir = t.requireDir(parent);
        InodeAttrs before = t.attrs(parent);
        Permissions.check(c, dir, W | X, "unlink");
        NsTx.Dentry d = requireEntry(t, parent, name);
        InodeAttrs victim = t.requireInode(d.child());
        if (victim.isDirectory()) {
            throw new StrataException(Status.IS_A_DIRECTORY, "unlink: \"" + Names.printable(name) + "\" is a directory (use rmdir)");
        }
        Permissions.checkSticky(c, dir, victim, "unlink");
        CheckpointOps.withdrawIfCommitted(t, parent, "unlink");
        t.clearDentry(parent, name);
        t.touchDir(parent);
        dropLink(t, victim, nowMillis);
        return t.touched(before, 0);
    }

    /** Removes {@code name}, an empty directory; answers {@code parent}'s attributes after. */
    InodeAttrs rmdir(NsTx t, Caller c, InodeId parent, String name) {
        Names.check(name);
        InodeAttrs dir = t.requireDir(parent);
        InodeAttrs before = t.attrs(parent);
        Permissions.check(c, dir, W | X, "rmdir");
        NsTx.Dentry d = requireEntry(t, parent, name);
        InodeAttrs victim = t.requireInode(d.child());
        if (!victim.isDirectory()) {
            throw new StrataException(Status.NOT_A_DIRECTORY, "rmdir: \"" + Names.printable(name) + "\" is not a directory");
        }
        Permissions.checkSticky(c, dir, victim, "rmdir");
        if (!t.isEmptyDir(victim.id())) {
            throw new StrataException(Status.DIRECTORY_NOT_EMPTY, "rmdir: \"" + Names.printable(name) + "\" is not empty");
        }
        CheckpointOps.withdrawIfCommitted(t, parent, "rmdir");
        CheckpointOps.withdrawIfCommitted(t, victim.id(), "rmdir");
        t.clearDentry(parent, name);
        t.touchDir(parent);
        t.countSubdir(dir, -1);
        t.deleteInode(victim.id());
        t.countInodes(-1);
        return t.touched(before, -1);
    }

    private static NsTx.Dentry requireEntry(NsTx t, InodeId parent, String name) {
        NsTx.Dentry d = t.dentry(parent, name);
        if (d == null) {
            throw new StrataException(Status.NOT_FOUND, "no entry \"" + Names.printable(name) + "\" in " + parent);
        }
        return d;
    }

    /** One name of {@code victim} (not a directory) is gone: drop the inode when nothing uses it any more. */
    private void dropLink(NsTx t, InodeAttrs victim, long nowMillis) {
        long n = victim.nlink() - 1;
        if (n > 0) {
            t.putInode(victim.withNlink(n, t.now));
        } else if (victim.isFile() && t.hasSessions(victim.id())) {
            t.putInode(victim.withNlink(0, t.now)); // kept for its open sessions; the last close frees it
        } else {
            destroy(t, victim, nowMillis);
        }
    }

    private void destroy(NsTx t, InodeAttrs victim, long nowMillis) {
        t.deleteInode(victim.id());
        t.countInodes(-1);
        if (victim.isFile()) {
            t.countBytes(-victim.length());
            t.clearStaging(victim.id());
            t.clearCached(victim.id());
            CheckpointOps.forgetCrc(t, victim.id());
            t.tx.clear(KeySpace.trim(victim.id())); // the collector frees every chunk, whatever the length
            t.enqueueGc(victim, nowMillis);
        }
    }

    void rename(NsTx t, Caller c, InodeId srcParent, String srcName, InodeId dstParent, String dstName, boolean noReplace,
                long nowMillis) {
        Names.check(srcName);
        Names.check(dstName);
        InodeAttrs sdir = t.requireDir(srcParent);
        InodeAttrs ddir = srcParent.equals(dstParent) ? sdir : t.requireDir(dstParent);
        Permissions.check(c, sdir, W | X, "rename");
        Permissions.check(c, ddir, W | X, "rename");
        if (ddir.nlink() == 0) {
            throw new StrataException(Status.NOT_FOUND, "rename: directory " + dstParent + " was removed");
        }
        NsTx.Dentry sd = requireEntry(t, srcParent, srcName);
        InodeAttrs src = t.requireInode(sd.child());
        Permissions.checkSticky(c, sdir, src, "rename");
        CheckpointOps.checkMutable(t, srcParent, "rename");
        CheckpointOps.checkMutable(t, dstParent, "rename");
        if (src.isDirectory()) {
            CheckpointOps.checkMutable(t, src.id(), "rename");
        }
        boolean moving = !srcParent.equals(dstParent);
        if (src.isDirectory() && moving) {
            Permissions.check(c, src, W, "rename (a moved directory's \"..\" changes)");
            // refuse to move a directory under itself: walk up from the target directory
            InodeAttrs cur = ddir;
            for (int depth = 0; ; depth++) {
                if (cur.id().equals(src.id())) {
                    throw new StrataException(Status.INVALID_ARGUMENT, "rename: cannot move " + src.id() + " into its own subtree");
                }
                if (cur.id().equals(InodeId.ROOT) || cur.parent() == null || depth > MAX_DEPTH) {
                    break;
                }
                cur = t.requireInode(cur.parent());
            }
        }
        NsTx.Dentry dd = t.dentry(dstParent, dstName);
        if (dd != null) {
            if (noReplace) {
                throw new StrataException(Status.ALREADY_EXISTS, "rename: \"" + Names.printable(dstName) + "\" exists in " + dstParent);
            }
            if (dd.child().equals(src.id())) {
                return; // both names are the same file: POSIX says do nothing
            }
            InodeAttrs victim = t.requireInode(dd.child());
            Permissions.checkSticky(c, ddir, victim, "rename");
            CheckpointOps.checkMutable(t, victim.id(), "rename");
            if (src.isDirectory()) {
                if (!victim.isDirectory()) {
                    throw new StrataException(Status.NOT_A_DIRECTORY, "rename: cannot replace the non-directory \""
                            + Names.printable(dstName) + "\" with a directory");
                }
                if (!t.isEmptyDir(victim.id())) {
                    throw new StrataException(Status.DIRECTORY_NOT_EMPTY, "rename: \"" + Names.printable(dstName) + "\" is not empty");
                }
                t.deleteInode(victim.id());
                t.countSubdir(ddir, -1);
                t.countInodes(-1);
            } else {
                if (victim.isDirectory()) {
                    throw new StrataException(Status.IS_A_DIRECTORY, "rename: cannot replace the directory \""
                            + Names.printable(dstName) + "\" with a non-directory");
                }
                dropLink(t, victim, nowMillis);
            }
        }
        t.clearDentry(srcParent, srcName);
        t.putDentry(dstParent, dstName, src.id(), src.type());
        if (src.isDirectory()) {
            t.putInode(src.withParent(dstParent, dstName, t.now));
            if (moving) { // its ".." now names the new parent
                t.countSubdir(sdir, -1);
                t.countSubdir(ddir, 1);
            }
        } else if (src.nlink() == 1) {
            t.putInode(src.withParent(dstParent, dstName, t.now)); // its one name (and ctime)
        } else {
            t.putInode(src.withNlink(src.nlink(), t.now)); // ctime
        }
        t.touchDir(srcParent);
        if (moving) {
            t.touchDir(dstParent);
        }
    }

    // ---- attributes ------------------------------------------------------------------------

    InodeAttrs setattr(NsTx t, Caller c, InodeId inode, SetAttr s) {
        InodeAttrs a = t.requireInode(inode);
        if (s.mode() != null || s.uid() != null || s.gid() != null || s.size() != null) {
            CheckpointOps.checkMutable(t, inode, "setattr");
        }
        int mode = a.mode();
        int uid = a.uid();
        int gid = a.gid();
        if (s.mode() != null) {
            Names.checkMode(s.mode());
            if (c.isRoot() || c.uid() == a.uid()) {
                mode = s.mode();
                if (!c.isRoot() && !c.inGroup(gid)) {
                    mode &= ~Permissions.SETGID;
                }
            } else if (clearsOnlySetIdBits(a.mode(), s.mode()) && (Permissions.allowed(c, a, W) || writableThrough(t, c, inode))) {
                mode = s.mode(); // after a write or truncate by someone other than root, the kernel clears them as that user
            } else {
                Permissions.requireOwner(c, a, "chmod");
            }
        }
        if (s.uid() != null && s.uid() != a.uid()) {
            if (!c.isRoot()) {
                throw new StrataException(Status.NOT_PERMITTED, "chown: only root may change the owner of " + inode);
            }
            uid = s.uid();
        }
        if (s.gid() != null && s.gid() != a.gid()) {
            if (!c.isRoot() && (c.uid() != a.uid() || !c.inGroup(s.gid()))) {
                throw new StrataException(Status.NOT_PERMITTED, "chgrp: " + c + " may not give " + inode + " to group " + s.gid());
            }
            gid = s.gid();
        }
        if ((s.uid() != null || s.gid() != null) && !c.isRoot() && !a.isDirectory()) {
            mode &= ~(Permissions.SETUID | Permissions.SETGID); // as Linux does for a non-root chown
        }
        InodeAttrs out = a.withOwner(mode, uid, gid, t.now);
        if (s.size() != null) {
            if (a.isDirectory()) {
                throw new StrataException(Status.IS_A_DIRECTORY, "truncate: " + inode + " is a directory");
            }
            if (!a.isFile()) {
                throw new StrataException(Status.INVALID_ARGUMENT, "truncate: " + inode + " is not a regular file");
            }
            if (s.size() < 0) {
                throw new StrataException(Status.INVALID_ARGUMENT, "truncate: negative size " + s.size());
            }
            if (!writableThrough(t, c, inode)) {
                checkNotImmutable(a, "truncate"); // a session opened for writing before the first publish keeps its rights
                Permissions.check(c, a, W, "truncate");
            }
            t.countBytes(s.size() - a.length());
            out = out.withData(s.size(), t.now);
            CheckpointOps.forgetCrc(t, inode);
            if (!c.isRoot() && c.uid() != a.uid()) {
                out = withoutSetId(out, t.now);
            }
        }
        if (s.atimeNanos() != null || s.mtimeNanos() != null) {
            boolean toNow = (s.atimeNanos() == null || s.atimeNanos() == SetAttr.NOW) && (s.mtimeNanos() == null || s.mtimeNanos() == SetAttr.NOW);
            if (toNow) {
                if (!c.isRoot() && c.uid() != a.uid() && !Permissions.allowed(c, a, W)) {
                    throw new StrataException(Status.PERMISSION_DENIED, "utimes: " + c + " may not touch " + inode);
                }
            } else {
                Permissions.requireOwner(c, a, "utimes");
            }
            long at = s.atimeNanos() == null ? out.atimeNanos() : s.atimeNanos() == SetAttr.NOW ? t.now : s.atimeNanos();
            long mt = s.mtimeNanos() == null ? out.mtimeNanos() : s.mtimeNanos() == SetAttr.NOW ? t.now : s.mtimeNanos();
            out = out.withTimes(at, mt, t.now);
            if (a.isDirectory() && s.mtimeNanos() != null) {
                t.tx.set(KeySpace.dirTime(inode), Bytes.le64(mt)); // an explicit time replaces the change-time key
            }
        }
        t.putInode(out);
        return t.withLinks(out);
    }

    /** Whether mode {@code to} is mode {@code from} with some of its set-user-ID and set-group-ID bits cleared, and nothing else changed. */
    static boolean clearsOnlySetIdBits(int from, int to) {
        int cleared = from & ~to;
        return to != from && (to & ~from) == 0 && (cleared & ~(Permissions.SETUID | Permissions.SETGID)) == 0;
    }

    /** Whether the caller acts through a session of {@code inode} opened for writing (an ftruncate(2) descriptor). */
    private static boolean writableThrough(NsTx t, Caller c, InodeId inode) {
        if (c.session() == 0) {
            return false;
        }
        byte[] v = t.reader.get(KeySpace.session(inode, c.session()));
        return v != null && v.length > 8 && (v[8] & OpenFlags.WRITE) != 0;
    }

    /**
     * A regular file after someone other than its owner or root changed its data: without the
     * set-user-ID bit, and without the set-group-ID bit when group execution is allowed (without
     * it the bit means mandatory locking), as Linux's write(2) and truncate(2) do. The owner's
     * own changes keep the bits here (the owner may set them anyway, and {@code cp -p} sets them
     * before its close publishes the writes); through a mount the kernel clears them for the
     * owner too, as it does on any Linux file system.
     */
    static InodeAttrs withoutSetId(InodeAttrs a, long now) {
        if (!a.isFile()) {
            return a;
        }
        int m = a.mode() & ~Permissions.SETUID;
        if ((m & 010) != 0) {
            m &= ~Permissions.SETGID;
        }
        return m == a.mode() ? a : a.withOwner(m, a.uid(), a.gid(), now);
    }

    byte[] getxattr(NsTx t, Caller c, InodeId inode, String name) {
        Names.checkChars(name, "attribute name");
        InodeAttrs a = t.requireInode(inode);
        Permissions.check(c, a, R, "getxattr");
        byte[] v = t.reader.get(KeySpace.xattr(inode, name));
        if (v == null) {
            throw new StrataException(Status.NO_SUCH_ATTRIBUTE, "no attribute \"" + Names.printable(name) + "\" on " + inode);
        }
        return v;
    }

    void setxattr(NsTx t, Caller c, InodeId inode, String name, byte[] value, int flags) {
        Names.checkChars(name, "attribute name");
        if (value.length > Names.MAX_XATTR_VALUE) {
            throw new StrataException(Status.INVALID_ARGUMENT, "attribute value of " + value.length + " bytes exceeds " + Names.MAX_XATTR_VALUE);
        }
        if ((flags & ~(OpenFlags.XATTR_CREATE | OpenFlags.XATTR_REPLACE)) != 0 || flags == (OpenFlags.XATTR_CREATE | OpenFlags.XATTR_REPLACE)) {
            throw new StrataException(Status.INVALID_ARGUMENT, "bad setxattr flags " + flags);
        }
        InodeAttrs a = t.requireInode(inode);
        Permissions.check(c, a, W, "setxattr");
        CheckpointOps.checkMutable(t, inode, "setxattr");
        byte[] k = KeySpace.xattr(inode, name);
        boolean exists = t.reader.get(k) != null;
        if (exists && (flags & OpenFlags.XATTR_CREATE) != 0) {
            throw new StrataException(Status.ALREADY_EXISTS, "attribute \"" + Names.printable(name) + "\" exists on " + inode);
        }
        if (!exists && (flags & OpenFlags.XATTR_REPLACE) != 0) {
            throw new StrataException(Status.NO_SUCH_ATTRIBUTE, "no attribute \"" + Names.printable(name) + "\" on " + inode);
        }
        t.tx.set(k, value);
        t.putInode(a.withNlink(a.nlink(), t.now));
    }

    List<String> listxattr(NsTx t, Caller c, InodeId inode) {
        InodeAttrs a = t.requireInode(inode);
        Permissions.check(c, a, R, "listxattr");
        byte[] p = KeySpace.under(KeySpace.XATTR, inode);
        List<String> out = new ArrayList<>();
        for (KeyValue kv : t.reader.getRange(p, Bytes.strinc(p), 0)) {
            out.add(KeySpace.nameAt(kv.key()));
        }
        return out;
    }

    void removexattr(NsTx t, Caller c, InodeId inode, String name) {
        Names.checkChars(name, "attribute name");
        InodeAttrs a = t.requireInode(inode);
        Permissions.check(c, a, W, "removexattr");
        CheckpointOps.checkMutable(t, inode, "removexattr");
        byte[] k = KeySpace.xattr(inode, name);
        if (t.reader.get(k) == null) {
            throw new StrataException(Status.NO_SUCH_ATTRIBUTE, "no attribute \"" + Names.printable(name) + "\" on " + inode);
        }
        t.tx.clear(k);
        t.putInode(a.withNlink(a.nlink(), t.now));
    }

    // ---- sessions and file length ----------------------------------------------------------

    OpenResult open(NsTx t, Caller c, InodeId inode, int flags, long clientId, long session) {
        checkOpenFlags(flags);
        return openSession(t, c, t.requireInode(inode), flags, clientId, session, true);
    }

    /**
     * A read-only open that registers no session (in a read-only transaction): the checks of
     * {@link #open} and the file as it is now, with session 0. Null when the open must be
     * tracked all the same: the file belongs to a committed checkpoint generation, whose readers
     * (a restore) hold it back from the keeper.
     */
    OpenResult openUntracked(NsTx t, Caller c, InodeId inode) {
        InodeAttrs a = t.requireInode(inode);
        if (!a.isFile()) {
            throw new StrataException(Status.INVALID_ARGUMENT, "open: " + inode + " is not a regular file");
        }
        if (CheckpointOps.isMember(t, inode)) {
            return null;
        }
        Permissions.check(c, a, R, "open");
        return new OpenResult(0, a, CacheOps.copiesOf(t, a));
    }

    /**
     * open(2) with O_CREAT: the file is created (or found) and opened in one transaction, its
     * mode checked only if it existed: the mode a create gives applies to later opens.
     */
    OpenResult createOpen(NsTx t, Caller c, InodeId parent, String name, int mode, boolean exclusive, int flags, long clientId,
                          long session, InodeId newId) {
        checkOpenFlags(flags);
        Created r = createFile(t, c, parent, name, mode, exclusive, newId);
        OpenResult o = openSession(t, c, r.attrs(), flags, clientId, session, !r.created());
        InodeAttrs dir = t.attrs(parent); // with or without this transaction's touch: touched() takes the maximum
        return new OpenResult(o.sessionId(), o.attrs(), o.cached(), r.created() ? t.touched(dir, 0) : dir);
    }

    /**
     * A file under {@code consistency = immutable} takes no new bytes once it was written (its
     * first writer published): readers cache it without revalidating. Enforced here as well as in
     * the client, so that a client that skips its own check cannot change such a file.
     */
    private static void checkNotImmutable(InodeAttrs a, String op) {
        if (Consistency.IMMUTABLE.policyName().equals(a.policy().get(PolicyField.CONSISTENCY.key()))
                && (a.dataVersion() > 1 || a.length() > 0)) {
            throw new StrataException(Status.READ_ONLY, op + ": " + a.id() + " is in an immutable directory and was already written");
        }
    }

    private static void checkOpenFlags(int flags) {
        if (flags == 0 || (flags & ~OpenFlags.ALL) != 0 || ((flags & OpenFlags.TRUNCATE) != 0 && (flags & OpenFlags.WRITE) == 0)) {
            throw new StrataException(Status.INVALID_ARGUMENT, "bad open flags " + flags);
        }
    }

    private OpenResult openSession(NsTx t, Caller c, InodeAttrs a, int flags, long clientId, long session, boolean checkAccess) {
        InodeId inode = a.id();
        if (a.isDirectory() && (flags & OpenFlags.WRITE) != 0) {
            throw new StrataException(Status.IS_A_DIRECTORY, "open for writing: " + inode + " is a directory");
        }
        if (!a.isFile()) {
            throw new StrataException(Status.INVALID_ARGUMENT, "open: " + inode + " is not a regular file");
        }
        int want = ((flags & OpenFlags.READ) != 0 ? R : 0) | ((flags & OpenFlags.WRITE) != 0 ? W : 0);
        if (checkAccess) {
            Permissions.check(c, a, want, "open");
        }
        if ((flags & OpenFlags.WRITE) != 0) {
            checkNotImmutable(a, "open for writing");
            CheckpointOps.checkMutable(t, inode, "open for writing");
            awaitTrim(t, inode);
            CheckpointOps.openedForWrite(t, inode, session);
        }
        if ((flags & OpenFlags.TRUNCATE) != 0 && a.length() != 0) {
            t.countBytes(-a.length());
            a = a.withData(0, t.now);
            t.putInode(a);
        }
        byte[] v = new byte[17];
        Bytes.putLe64(v, 0, clientId);
        v[8] = (byte) flags;
        Bytes.putLe64(v, 9, t.now);
        t.tx.set(KeySpace.session(inode, session), v);
        return new OpenResult(session, a, CacheOps.copiesOf(t, a));
    }

    /** Close ({@code end}) or fsync: publish the session's writes; close also ends it and may free an unlinked file. */
    InodeAttrs publish(NsTx t, Caller c, InodeId inode, long session, long writtenLength, boolean wrote, boolean end, long nowMillis) {
        return publish(t, c, inode, session, writtenLength, wrote, end, io.strata.protocol.meta.Checkpoint.NO_CRC, 0, nowMillis);
    }

    /** {@link #publish} with the session's content checksum ({@link CheckpointOps#published}). */
    InodeAttrs publish(NsTx t, Caller c, InodeId inode, long session, long writtenLength, boolean wrote, boolean end, long contentCrc,
                       long crcLength, long nowMillis) {
        byte[] sk = KeySpace.session(inode, session);
        if (t.tx.get(sk) == null) {
            throw new StrataException(Status.STALE_HANDLE, "no open session " + Long.toUnsignedString(session) + " on " + inode);
        }
        InodeAttrs a = t.requireInode(inode);
        if (wrote) {
            if (writtenLength < 0) {
                throw new StrataException(Status.INVALID_ARGUMENT, "negative written length " + writtenLength);
            }
            long len = Math.max(a.length(), writtenLength);
            t.countBytes(len - a.length());
            a = a.withData(len, t.now);
            if (!c.isRoot() && c.uid() != a.uid()) {
                a = withoutSetId(a, t.now);
            }
            t.putInode(a);
        }
        if (a.isFile()) {
            CheckpointOps.published(t, a, session, wrote, end, contentCrc, crcLength);
        }
        if (end) {
            t.tx.clear(sk);
            if (a.nlink() == 0 && !t.hasSessions(inode)) {
                destroy(t, a, nowMillis);
            }
        }
        return a;
    }

    /**
     * The fence of a trim ({@code TRIM} key): a file whose dead writer may have left bytes past
     * its length is not opened for writing while the trim may run, i.e. while it has no other
     * write session, or a new writer could write there just before the collector removes the
     * chunk, or extend the file over the dead writer's bytes. The open fails with a conflict, which
     * the transaction layer retries with backoff: it goes through once the trim is done. While
     * another writer holds the file the trim waits for it, so a new writer may join it.
     */
    private static void awaitTrim(NsTx t, InodeId inode) {
        if (t.tx.get(KeySpace.trim(inode)) != null && !t.hasWriteSessions(inode)) {
            throw new StrataException(Status.TXN_CONFLICT, "open for writing: " + inode
                    + " waits for the collector to remove bytes a dead writer left past its length");
        }
    }

    /** A session as the pruner found it: its file, its id, its client. */
    record SessionRef(InodeId inode, long session, long clientId) {
        static SessionRef of(KeyValue kv) {
            return new SessionRef(KeySpace.idAt(kv.key()), java.nio.ByteBuffer.wrap(kv.key(), 12, 8).getLong(),
                    Bytes.readLe64(kv.value(), 0, 8));
        }
    }

    /**
     * Ends every session of {@code clientId} (a client known to be gone); returns how many. With
     * {@code trim}, a write session's file that stays is queued for a trim past its length.
     */
    int pruneSessions(NsTx t, long clientId, long nowMillis, int max, boolean trim) {
        byte[] p = KeySpace.SESSION.prefix();
        int n = 0;
        for (KeyValue kv : t.tx.snapshot().getRange(p, Bytes.strinc(p), 0)) {
            if (n >= max) {
                break;
            }
            if (Bytes.readLe64(kv.value(), 0, 8) == clientId && endSession(t, SessionRef.of(kv), nowMillis, trim)) {
                n++;
            }
        }
        return n;
    }

    /**
     * Ends those of {@code candidates} whose client's lease has run out, checked again here: the
     * session still exists and is still that client's, and neither the client's last keep-alive
     * ({@code LEAS}, read with a conflict so that a keep-alive committing meanwhile makes this
     * transaction run again) nor the session's open is within {@code leaseMillis} of
     * {@code nowMillis}. Returns the sessions ended.
     */
    List<SessionRef> pruneExpired(NsTx t, List<SessionRef> candidates, long leaseMillis, long nowMillis, boolean trim) {
        List<SessionRef> ended = new ArrayList<>();
        Map<Long, Long> seen = new java.util.HashMap<>();
        for (SessionRef r : candidates) {
            byte[] v = t.tx.get(KeySpace.session(r.inode(), r.session()));
            if (v == null || Bytes.readLe64(v, 0, 8) != r.clientId()) {
                continue; // closed (or pruned) meanwhile
            }
            long lastSeen = seen.computeIfAbsent(r.clientId(), id -> {
                byte[] l = t.tx.get(KeySpace.lease(id));
                return l == null ? 0L : Bytes.readLe64(l);
            });
            if (Math.max(lastSeen, openedMillis(v)) + leaseMillis > nowMillis) {
                continue;
            }
            if (endSession(t, r, nowMillis, trim)) {
                ended.add(r);
            }
        }
        return ended;
    }

    /** When a session was opened (ms since the epoch), from its {@code SESS} value. */
    static long openedMillis(byte[] sessionValue) {
        return sessionValue.length >= 17 ? Bytes.readLe64(sessionValue, 9, 8) / 1_000_000 : 0;
    }

    /**
     * Ends one session of a dead client as a close that publishes nothing would (an unlinked file
     * it was the last to hold is freed); a write session's file that stays gets a trim queued.
     */
    private boolean endSession(NsTx t, SessionRef r, long nowMillis, boolean trim) {
        byte[] v = t.tx.get(KeySpace.session(r.inode(), r.session()));
        if (v == null) {
            return false;
        }
        publish(t, Caller.ROOT, r.inode(), r.session(), -1, false, true, nowMillis);
        InodeAttrs a = t.inode(r.inode());
        if (a != null && isLibfuseHidden(t, a) && !t.hasSessions(a.id())) {
            // unlinked while this mount held it open: libfuse renamed it instead and would have
            // removed the name at the last release, which a dead mount never sends
            unlink(t, Caller.ROOT, a.parent(), a.name(), nowMillis);
            return true;
        }
        if (trim && NsTx.isWriteSession(v) && a != null) {
            t.enqueueTrim(r.inode(), nowMillis);
        }
        return true;
    }

    /**
     * A file whose only name is the one libfuse gave it when it was unlinked while open (a file
     * with one link records its name as renames move it; the entry is checked all the same).
     */
    private static boolean isLibfuseHidden(NsTx t, InodeAttrs a) {
        if (!a.isFile() || a.nlink() != 1 || a.parent() == null || a.name() == null || !a.name().startsWith(Names.LIBFUSE_HIDDEN)) {
            return false;
        }
        NsTx.Dentry d = t.dentry(a.parent(), a.name());
        return d != null && d.child().equals(a.id());
    }

    // ---- policies --------------------------------------------------------------------------

    /** The effective policy of directory {@code dir}, resolved from the root down. */
    PolicyResolver.Effective effectivePolicy(NsTx t, InodeAttrs dir) {
        List<InodeAttrs> chain = new ArrayList<>();
        InodeAttrs cur = dir;
        for (int depth = 0; ; depth++) {
            chain.add(cur);
            if (cur.id().equals(InodeId.ROOT) || cur.parent() == null) {
                break;
            }
            if (depth > MAX_DEPTH) {
                throw new StrataException(Status.INTERNAL, "directory chain above " + dir.id() + " is deeper than " + MAX_DEPTH);
            }
            byte[] v = t.tx.snapshot().get(KeySpace.inode(cur.parent()));
            if (v == null) {
                throw new StrataException(Status.NOT_FOUND, "ancestor " + cur.parent() + " of " + dir.id() + " is gone");
            }
            cur = Codec.inodeFrom(v);
        }
        List<PolicyResolver.Level> levels = new ArrayList<>();
        StringBuilder path = new StringBuilder();
        for (int i = chain.size() - 1; i >= 0; i--) {
            InodeAttrs d = chain.get(i);
            if (i < chain.size() - 1) {
                path.append('/').append(d.name());
            }
            levels.add(new PolicyResolver.Level(path.isEmpty() ? "/" : path.toString(), PolicyOverrides.fromMap(d.policy())));
        }
        PolicyResolver.Effective cached = resolved.get(levels);
        if (cached != null) {
            return cached;
        }
        PolicyResolver.Effective eff = PolicyResolver.resolve(basePolicy, levels); // throws on a bad combination: not cached
        if (resolved.size() >= POLICY_CACHE_SIZE) {
            resolved.clear();
        }
        resolved.put(List.copyOf(levels), eff);
        return eff;
    }

    PolicyInfo policyGet(NsTx t, Caller c, InodeId dir) {
        InodeAttrs d = t.requireDir(dir);
        PolicyResolver.Effective eff = effectivePolicy(t, d);
        return new PolicyInfo(pathOf(t, d), new TreeMap<>(d.policy()), fields(eff));
    }

    /**
     * Changes a directory's policy overrides. An {@code operator} (an admin token, or a server
     * that does not authenticate) may as the directory's owner or root; anyone else only as its
     * owner, root included (docs/security.md, "Directory policies"). A non-operator who makes a
     * directory a checkpoint root ({@code profile=checkpoint}) must own every entry in it too:
     * the retention removes whole generations as root, which must not reach other users' files.
     */
    PolicyInfo policySet(NsTx t, Caller c, InodeId dir, List<String> assignments, boolean operator) {
        InodeAttrs d = t.requireDir(dir);
        if (operator) {
            Permissions.requireOwner(c, d, "policy set");
        } else if (c.uid() != d.uid()) {
            throw new StrataException(Status.NOT_PERMITTED, "policy set: " + pathOf(t, d) + " belongs to uid " + d.uid()
                    + ": a policy on another user's directory takes an admin token (the caller is " + c + ")");
        }
        PolicyOverrides current = PolicyOverrides.fromMap(d.policy());
        PolicyOverrides changed = current;
        for (String a : assignments) {
            int eq = a.indexOf('=');
            if (eq <= 0) {
                throw new StrataException(Status.INVALID_ARGUMENT, "expected key=value, got \"" + a + "\"");
            }
            changed = changed.with(a.substring(0, eq).trim(), a.substring(eq + 1).trim());
        }
        InodeAttrs updated = d.withPolicy(changed.toMap(), t.now);
        PolicyResolver.Effective eff = effectivePolicy(t, updated); // rejects a combination that does not fit
        if (!operator && CheckpointOps.isRoot(updated) && !CheckpointOps.isRoot(d)) {
            requireOwnsEntries(t, c, d);
        }
        t.putInode(updated);
        CheckpointOps.policyChanged(t, updated);
        return new PolicyInfo(pathOf(t, updated), new TreeMap<>(updated.policy()), fields(eff));
    }

    private void requireOwnsEntries(NsTx t, Caller c, InodeAttrs d) {
        byte[] p = KeySpace.under(KeySpace.DENTRY, d.id());
        for (KeyValue kv : t.reader.getRange(p, Bytes.strinc(p), 0)) {
            InodeAttrs child = t.inode(InodeId.of(Bytes.readLe64(kv.value(), 0, 8)));
            if (child != null && child.uid() != c.uid()) {
                throw new StrataException(Status.NOT_PERMITTED, "policy set: " + pathOf(t, d) + "/" + KeySpace.nameAt(kv.key())
                        + " belongs to uid " + child.uid() + ": only an admin token makes a checkpoint root of a directory"
                        + " holding other users' entries (retention would remove them)");
            }
        }
    }

    /** The path of a directory, from the names its ancestors record. */
    String pathOf(NsTx t, InodeAttrs dir) {
        List<String> names = new ArrayList<>();
        InodeAttrs cur = dir;
        for (int depth = 0; !cur.id().equals(InodeId.ROOT) && cur.parent() != null && depth <= MAX_DEPTH; depth++) {
            names.add(cur.name());
            byte[] v = t.tx.snapshot().get(KeySpace.inode(cur.parent()));
            if (v == null) {
                break;
            }
            cur = Codec.inodeFrom(v);
        }
        StringBuilder sb = new StringBuilder();
        for (int i = names.size() - 1; i >= 0; i--) {
            sb.append('/').append(names.get(i));
        }
        return sb.isEmpty() ? "/" : sb.toString();
    }

    static InodeAttrs newRoot(long now) {
        return new InodeAttrs(InodeId.ROOT, InodeType.DIRECTORY, 0755, 0, 0, NsTx.COUNTED_DIR_LINKS, 0, 1, now, now, now,
                InodeId.ROOT, "", "", null, Map.of(), 0, 0);
    }

    static boolean sameBytes(byte[] a, byte[] b) {
        return Arrays.equals(a, b);
    }

    private static List<PolicyInfo.Field> fields(PolicyResolver.Effective eff) {
        return eff.sources().stream().map(s -> new PolicyInfo.Field(s.field().key(), s.value(), s.from())).toList();
    }
}
