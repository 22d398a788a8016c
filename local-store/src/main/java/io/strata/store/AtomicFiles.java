package io.strata.store;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.strata.core.fault.FaultInjector;
import io.strata.core.fault.FaultPoint;
import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;

/**
 * Crash-safe file writes: the bytes go to a temporary file next to the target
 * ({@code <name>.tmp}), which is fdatasync'ed (when asked) and then renamed over the target in
 * one atomic step. Whatever happens meanwhile (an error, a crash at any point) the target holds
 * either its old bytes or all of the new ones, never a mix; what a crash can leave is a
 * temporary file, which {@link OrphanSweep} recognises ({@link #isTemporary}). The files are
 * private to the process's user ({@link PrivateFiles#FILE}, 0600).
 *
 * <p>Writing ({@link #stage}) and renaming ({@link Staged#commit}) are separate steps, so that a
 * caller can decide, after the bytes are safe, whether they may still replace the target (L1
 * renames a block file only if nothing changed its chunk meanwhile). A rename is durable only
 * once the directory is fsync'ed ({@link Staged#commit(boolean)}); a caller that indexes the
 * file elsewhere and checks it on every read may skip that and treat a lost rename as a missing
 * file.
 */
public final class AtomicFiles {
    public static final String TEMP_SUFFIX = ".tmp";

    /** Where a test may fail or crash a write: half the bytes written, before the fdatasync, before the rename. */
    public record Faults(FaultPoint halfWritten, FaultPoint beforeSync, FaultPoint beforeRename) {
    }

    private static final AtomicFiles PLAIN = new AtomicFiles(FaultInjector.disabled(),
            new Faults(FaultPoint.of("store.file-write"), FaultPoint.of("store.file-sync"), FaultPoint.of("store.file-rename")));

    private final FaultInjector injector;
    private final Faults faults;

    /** Writes that fire {@code faults} through {@code injector}. */
    public AtomicFiles(FaultInjector injector, Faults faults) {
        this.injector = injector;
        this.faults = faults;
    }

    /** Writes without fault points of their own (nothing can arm them). */
    public static AtomicFiles plain() {
        return PLAIN;
    }

    /** The temporary file a write of {@code target} goes through. */
    public static Path temporary(Path target) {
        return target.resolveSibling(target.getFileName() + TEMP_SUFFIX);
    }

    /** Whether a file name is that of a temporary file (a write that never completed). */
    public static boolean isTemporary(String name) {
        return name.endsWith(TEMP_SUFFIX);
    }

    /**
     * Writes the readable bytes of {@code data} (borrowed) to the temporary file of
     * {@code target}, fdatasync'ed when {@code sync}; the target is untouched until
     * {@link Staged#commit}. On failure the temporary file is deleted and the error thrown.
     */
    public Staged stage(Path target, ByteBuf data, boolean sync) throws IOException {
        Path tmp = temporary(target);
        try (FileChannel ch = PrivateFiles.open(tmp, StandardOpenOption.CREATE, StandardOpenOption.TRUNCATE_EXISTING,
                StandardOpenOption.WRITE)) {
            int len = data.readableBytes();
            int half = len / 2;
            ChannelIo.writeFully(ch, data, data.readerIndex(), half, 0);
            injector.fire(faults.halfWritten());
            ChannelIo.writeFully(ch, data, data.readerIndex() + half, len - half, half);
            injector.fire(faults.beforeSync());
            if (sync) {
                ch.force(false);
            }
        } catch (IOException | RuntimeException e) {
            deleteQuietly(tmp);
            throw e;
        }
        return new Staged(target, tmp);
    }

    /** {@link #stage} then {@link Staged#commit(boolean)}: the whole write, durable (directory included) when {@code sync}. */
    public void write(Path target, ByteBuf data, boolean sync) throws IOException {
        Staged s = stage(target, data, sync);
        try {
            s.commit(sync);
        } catch (IOException | RuntimeException e) {
            s.abandon();
            throw e;
        }
    }

    /** {@link #write(Path, ByteBuf, boolean)} of {@code text} in UTF-8: a small file such as a ready or state file. */
    public void write(Path target, String text, boolean sync) throws IOException {
        write(target, Unpooled.wrappedBuffer(text.getBytes(StandardCharsets.UTF_8)), sync);
    }

    private static void deleteQuietly(Path p) {
        try {
            Files.deleteIfExists(p);
        } catch (IOException ignored) {
            // a temporary file left behind is swept at the next open
        }
    }

    /** A written temporary file, to be renamed over its target or abandoned. */
    public final class Staged {
        private final Path target;
        private final Path temporary;

        private Staged(Path target, Path temporary) {
            this.target = target;
            this.temporary = temporary;
        }

        public Path target() {
            return target;
        }

        /** Renames the temporary file over the target (atomic; the directory entry is not fsync'ed). */
        public void commit() throws IOException {
            commit(false);
        }

        /** Renames the temporary file over the target, then fsyncs the directory when {@code syncDirectory}. */
        public void commit(boolean syncDirectory) throws IOException {
            injector.fire(faults.beforeRename());
            Files.move(temporary, target, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
            if (syncDirectory) {
                ChannelIo.syncDirectory(target.toAbsolutePath().getParent());
            }
        }

        /** Deletes the temporary file (nothing when it was renamed already); never throws. */
        public void abandon() {
            deleteQuietly(temporary);
        }
    }
}
