package io.strata.protocol.meta;

import io.strata.core.InodeId;
import java.util.Map;

/**
 * An inode as the namespace stores and returns it. Times are nanoseconds since the epoch.
 *
 * @param mode           permission bits with setuid/setgid/sticky (07777)
 * @param nlink          names pointing at it (files and symlinks); 0 for an unlinked file kept
 *                       alive by open sessions; directories report 1 ("not counted", as btrfs)
 * @param length         file length in bytes (the exact length recorded by close/fsync/truncate)
 * @param dataVersion    bumped by every close/fsync after writes and by truncate; L1 keys on it
 * @param parent         directories: the parent directory (the root is its own parent)
 * @param name           directories: their name in the parent (for paths in policy sources)
 * @param symlinkTarget  symlinks: the target; "" otherwise
 * @param layout         files: the layout fixed at create; null otherwise
 * @param policy         directories: the policy overrides set on them (PolicyOverrides.toMap())
 * @param chunkHighWater files: the most chunks the file ever had, so the collector frees all
 */
public record InodeAttrs(InodeId id, InodeType type, int mode, int uid, int gid, long nlink, long length,
                         long dataVersion, long atimeNanos, long mtimeNanos, long ctimeNanos, InodeId parent,
                         String name, String symlinkTarget, Layout layout, Map<String, String> policy,
                         long chunkHighWater) {
    public InodeAttrs {
        policy = Map.copyOf(policy);
        symlinkTarget = symlinkTarget == null ? "" : symlinkTarget;
        name = name == null ? "" : name;
    }

    public boolean isDirectory() {
        return type == InodeType.DIRECTORY;
    }

    public boolean isFile() {
        return type == InodeType.FILE;
    }

    public InodeAttrs withNlink(long n, long now) {
        return new InodeAttrs(id, type, mode, uid, gid, n, length, dataVersion, atimeNanos, mtimeNanos, now, parent, name,
                symlinkTarget, layout, policy, chunkHighWater);
    }

    public InodeAttrs withParent(InodeId p, String n, long now) {
        return new InodeAttrs(id, type, mode, uid, gid, nlink, length, dataVersion, atimeNanos, mtimeNanos, now, p, n,
                symlinkTarget, layout, policy, chunkHighWater);
    }

    public InodeAttrs withPolicy(Map<String, String> p, long now) {
        return new InodeAttrs(id, type, mode, uid, gid, nlink, length, dataVersion, atimeNanos, mtimeNanos, now, parent, name,
                symlinkTarget, layout, p, chunkHighWater);
    }

    public InodeAttrs withTimes(long atime, long mtime, long ctime) {
        return new InodeAttrs(id, type, mode, uid, gid, nlink, length, dataVersion, atime, mtime, ctime, parent, name,
                symlinkTarget, layout, policy, chunkHighWater);
    }

    public InodeAttrs withOwner(int m, int u, int g, long now) {
        return new InodeAttrs(id, type, m, u, g, nlink, length, dataVersion, atimeNanos, mtimeNanos, now, parent, name,
                symlinkTarget, layout, policy, chunkHighWater);
    }

    /** The file's data changed: new length, next data version, new mtime/ctime. */
    public InodeAttrs withData(long newLength, long now) {
        long hw = layout == null ? chunkHighWater : Math.max(chunkHighWater, layout.chunksFor(newLength));
        return new InodeAttrs(id, type, mode, uid, gid, nlink, newLength, dataVersion + 1, atimeNanos, now, now, parent, name,
                symlinkTarget, layout, policy, hw);
    }
}
