package io.strata.store;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.OpenOption;
import java.nio.file.Path;
import java.nio.file.attribute.FileAttribute;
import java.nio.file.attribute.PosixFileAttributes;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.nio.file.attribute.UserPrincipal;
import java.util.Collections;
import java.util.EnumSet;
import java.util.Set;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Files at rest are private to the daemon's user: every directory a daemon keeps data in is
 * {@code rwx------} (0700) and every file it writes there {@code rw-------} (0600). The modes are
 * given explicitly at creation, so they do not depend on the process umask (which can only take
 * bits away). Chunk bytes, indexes and configuration are then out of reach of other local users
 * even on a shared machine; root can still read them, so a daemon should run as a user of its own.
 *
 * <p>An existing directory open to other users (made by an older version, or by hand) is
 * tightened to 0700 when the daemon's user owns it, with one warning naming it; files made
 * before stay as they are, out of reach behind the directory. A directory that other users may
 * write and that cannot be tightened (owned by someone else, or a shared directory with the
 * sticky bit such as {@code /tmp}) is refused: whoever can write it can plant or swap the
 * daemon's files.
 */
public final class PrivateFiles {
    private static final Logger LOG = LoggerFactory.getLogger(PrivateFiles.class);

    /** The mode of every data directory: {@code rwx------}. */
    public static final Set<PosixFilePermission> DIRECTORY = PosixFilePermissions.fromString("rwx------");
    /** The mode of every data file: {@code rw-------}. */
    public static final Set<PosixFilePermission> FILE = PosixFilePermissions.fromString("rw-------");
    /** {@link #FILE} as a number, for the APIs that take one (LMDB's {@code mdb_env_open}). */
    public static final int FILE_MODE = 0600;

    private static final FileAttribute<Set<PosixFilePermission>> DIRECTORY_ATTRIBUTE = PosixFilePermissions.asFileAttribute(DIRECTORY);
    private static final FileAttribute<Set<PosixFilePermission>> FILE_ATTRIBUTE = PosixFilePermissions.asFileAttribute(FILE);
    private static final Set<PosixFilePermission> OTHERS_WRITE = EnumSet.of(PosixFilePermission.GROUP_WRITE, PosixFilePermission.OTHERS_WRITE);
    private static final int STICKY = 01000;

    private PrivateFiles() {
    }

    /**
     * Creates {@code dir} and any missing parents 0700; an existing {@code dir} open to other
     * users is tightened, or refused (see the class comment). Returns {@code dir}.
     *
     * @throws FileSystemException naming {@code dir} and the fix when other users may write it
     *                             and it cannot be tightened
     */
    public static Path createDirectories(Path dir) throws IOException {
        Files.createDirectories(dir, DIRECTORY_ATTRIBUTE);
        PosixFileAttributes a = Files.readAttributes(dir, PosixFileAttributes.class);
        Set<PosixFilePermission> perms = a.permissions();
        if (DIRECTORY.containsAll(perms)) {
            return dir;
        }
        if (ownedByUs(dir, a.owner()) && !sticky(dir)) {
            Files.setPosixFilePermissions(dir, DIRECTORY);
            LOG.warn("{} was {}, open to other users: tightened to rwx------ (data directories are private to the daemon's user)",
                    dir, PosixFilePermissions.toString(perms));
            return dir;
        }
        requireNotWritableByOthers(dir);
        LOG.warn("{} is {} and owned by {}, so it stays readable by other users (its files are not): make it private with: chmod 700 {}",
                dir, PosixFilePermissions.toString(perms), a.owner().getName(), dir);
        return dir;
    }

    /**
     * Refuses {@code dir} when users other than its owner may write it (group or others write
     * bit): they could plant or swap files the daemon then trusts.
     *
     * @throws FileSystemException naming {@code dir}, its mode and the fix
     */
    public static void requireNotWritableByOthers(Path dir) throws IOException {
        Set<PosixFilePermission> perms = Files.getPosixFilePermissions(dir);
        if (!Collections.disjoint(perms, OTHERS_WRITE)) {
            throw new FileSystemException(dir.toString(), null, "writable by other users (mode " + PosixFilePermissions.toString(perms)
                    + "), who could plant or swap its files; make it private with: chmod 700 " + dir + " (or use another directory)");
        }
    }

    /** Opens {@code file} with {@code options}; a file it creates is 0600. */
    public static FileChannel open(Path file, OpenOption... options) throws IOException {
        return FileChannel.open(file, Set.of(options), FILE_ATTRIBUTE);
    }

    /** Creates the empty file {@code file}, 0600 (fails when it exists). */
    public static Path createFile(Path file) throws IOException {
        return Files.createFile(file, FILE_ATTRIBUTE);
    }

    private static boolean ownedByUs(Path dir, UserPrincipal owner) {
        try {
            return owner.equals(dir.getFileSystem().getUserPrincipalLookupService().lookupPrincipalByName(System.getProperty("user.name")));
        } catch (IOException e) {
            return false; // a user without a name (no passwd entry): we cannot tell, so we do not touch the directory
        }
    }

    /** A shared directory ({@code /tmp}): its owner lets everyone create files in it; never ours to close. */
    private static boolean sticky(Path dir) throws IOException {
        return ((int) Files.getAttribute(dir, "unix:mode") & STICKY) != 0;
    }
}
