package io.strata.protocol.meta;

import io.strata.core.InodeId;
import java.util.Map;

/**
 * An inode as the namespace stores and returns it. Times are nanoseconds since the epoch.
 *
 * @param mode           permission bits with setuid/setgid/sticky (07777)
 * @param nlink          files, symlinks and special files: names pointing at it (0 for an unlinked
 *                       file kept alive by open sessions); directories: 2 plus the number of
 *                       subdirectories (the name in the parent, ".", and each subdirectory's
 *                       ".."), or 1 for a directory made before subdirectories were counted
 * @param length         file length in bytes (the exact length recorded by close/fsync/truncate)
 * @param dataVersion    bumped by every close/fsync after writes and by truncate; L1 keys on it
 * @param parent         directories: the parent directory (the root is its own parent)
 * @param name           directories: their name in the parent (for paths in policy sources)
 * @param symlinkTarget  symlinks: the target; "" otherwise
 * @param layout         files: the layout fixed at create; null otherwise
 * @param policy         directories: the policy overrides set on them (PolicyOverrides.toMap())
 * @param chunkHighWater files: the most chunks the file ever had, so the collector frees all
 * @param rdev           character and block devices: the device number ({@link DeviceNumber}); 0 for
 *                       every other type
 */
public record InodeAttrs(InodeId id, InodeType type, int mode, int uid, int gid, long nlink, long length,
                         long dataVersion, long atimeNanos, long mtimeNanos, long ctimeNanos, InodeId parent,
                         String name, String symlinkTarget, Layout layout, Map<String, String> policy,
                         long chunkHighWater, long rdev) {
    public InodeAttrs {
        if (rdev != 0 && !type.isDevice()) {
            throw new IllegalArgumentException("a " + type + " has no device number (got " + rdev + ")");
        }
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

    /** A FIFO, socket or device ({@link InodeType#isSpecial}). */
    public boolean isSpecial() {
        return type.isSpecial();
    }

    /** The same inode reporting link count {@code n}, times unchanged. */
    public InodeAttrs withLinkCount(long n) {
        return new InodeAttrs(id, type, mode, uid, gid, n, length, dataVersion, atimeNanos, mtimeNanos, ctimeNanos, parent, name,
                symlinkTarget, layout, policy, chunkHighWater, rdev);
    }

    public InodeAttrs withNlink(long n, long now) {
        return new InodeAttrs(id, type, mode, uid, gid, n, length, dataVersion, atimeNanos, mtimeNanos, now, parent, name,
                symlinkTarget, layout, policy, chunkHighWater, rdev);
    }

    public InodeAttrs withParent(InodeId p, String n, long now) {
        return new InodeAttrs(id, type, mode, uid, gid, nlink, length, dataVersion, atimeNanos, mtimeNanos, now, p, n,
                symlinkTarget, layout, policy, chunkHighWater, rdev);
    }

    public InodeAttrs withPolicy(Map<String, String> p, long now) {
        return new InodeAttrs(id, type, mode, uid, gid, nlink, length, dataVersion, atimeNanos, mtimeNanos, now, parent, name,
                symlinkTarget, layout, p, chunkHighWater, rdev);
    }

    public InodeAttrs withTimes(long atime, long mtime, long ctime) {
        return new InodeAttrs(id, type, mode, uid, gid, nlink, length, dataVersion, atime, mtime, ctime, parent, name,
                symlinkTarget, layout, policy, chunkHighWater, rdev);
    }

    public InodeAttrs withOwner(int m, int u, int g, long now) {
        return new InodeAttrs(id, type, m, u, g, nlink, length, dataVersion, atimeNanos, mtimeNanos, now, parent, name,
                symlinkTarget, layout, policy, chunkHighWater, rdev);
    }

    /** The file's data changed: new length, next data version, new mtime/ctime. */
    public InodeAttrs withData(long newLength, long now) {
        long hw = layout == null ? chunkHighWater : Math.max(chunkHighWater, layout.chunksFor(newLength));
        return new InodeAttrs(id, type, mode, uid, gid, nlink, newLength, dataVersion + 1, atimeNanos, now, now, parent, name,
                symlinkTarget, layout, policy, hw, rdev);
    }
}
