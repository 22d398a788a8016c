package io.strata.client;

import io.strata.config.policy.Consistency;
import io.strata.core.InodeId;
import io.strata.protocol.meta.InodeAttrs;
import io.strata.protocol.meta.InodeType;
import io.strata.protocol.meta.Layout;
import java.util.Map;

/**
 * What {@code stat} reports for a file, directory or symlink. {@code size} of a file includes
 * what this client wrote and has not published yet (its own open files), so a writer sees its
 * writes at once; other clients see them after the writer's close or fsync.
 *
 * @param policy files: the effective policy fixed at create (every field); directories: the
 *               overrides they set themselves
 */
public record FileStatus(InodeId inode, InodeType type, int mode, int uid, int gid, long nlink, long size,
                         long dataVersion, long atimeNanos, long mtimeNanos, long ctimeNanos, String symlinkTarget,
                         Layout layout, Map<String, String> policy) {

    static FileStatus of(InodeAttrs a, long size) {
        return new FileStatus(a.id(), a.type(), a.mode(), a.uid(), a.gid(), a.nlink(), size, a.dataVersion(), a.atimeNanos(),
                a.mtimeNanos(), a.ctimeNanos(), a.symlinkTarget(), a.layout(), a.policy());
    }

    static FileStatus of(InodeAttrs a) {
        return of(a, a.type() == InodeType.SYMLINK ? a.symlinkTarget().getBytes(java.nio.charset.StandardCharsets.UTF_8).length
                : a.length());
    }

    public boolean isDirectory() {
        return type == InodeType.DIRECTORY;
    }

    public boolean isFile() {
        return type == InodeType.FILE;
    }

    public boolean isSymlink() {
        return type == InodeType.SYMLINK;
    }

    /** A file's consistency mode (its policy at create); directories and symlinks: close-to-open. */
    public Consistency consistency() {
        return isFile() ? FilePolicy.of(policy).policy().consistency() : Consistency.CLOSE_TO_OPEN;
    }
}
