package io.strata.bench.fs;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;

/**
 * A directory as an {@link FsTarget}: a FUSE mount of Strata, a local disk directory, tmpfs,
 * through {@link FileChannel} positional I/O and {@link FileChannel#force} for fsync.
 */
public final class DirTarget implements FsTarget {
    private final String name;
    private final Path root;
    private final Counters.Source counters;

    public DirTarget(String name, Path root, Counters.Source counters) {
        this.name = name;
        this.root = root.toAbsolutePath().normalize();
        this.counters = counters;
    }

    /** A plain directory: no counters to read. */
    public static DirTarget plain(String name, Path root) {
        return new DirTarget(name, root, Counters.none("not available for a plain directory"));
    }

    public Path root() {
        return root;
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public String describe() {
        return "directory " + root;
    }

    @Override
    public void mkdirs(String path) throws IOException {
        Files.createDirectories(root.resolve(path));
    }

    @Override
    public Handle create(String path) throws IOException {
        return new ChannelHandle(FileChannel.open(root.resolve(path), StandardOpenOption.CREATE, StandardOpenOption.WRITE,
                StandardOpenOption.TRUNCATE_EXISTING));
    }

    @Override
    public Handle open(String path) throws IOException {
        return new ChannelHandle(FileChannel.open(root.resolve(path), StandardOpenOption.READ));
    }

    @Override
    public long size(String path) throws IOException {
        return Files.readAttributes(root.resolve(path), BasicFileAttributes.class).size();
    }

    @Override
    public void deleteTree(String path) throws IOException {
        Path top = root.resolve(path);
        if (!Files.exists(top)) {
            return;
        }
        Files.walkFileTree(top, new SimpleFileVisitor<>() {
            @Override
            public FileVisitResult visitFile(Path file, BasicFileAttributes attrs) throws IOException {
                delete(file);
                return FileVisitResult.CONTINUE;
            }

            @Override
            public FileVisitResult postVisitDirectory(Path dir, IOException e) throws IOException {
                if (e != null) {
                    throw e;
                }
                delete(dir);
                return FileVisitResult.CONTINUE;
            }
        });
    }

    private static void delete(Path p) throws IOException {
        try {
            Files.delete(p);
        } catch (NoSuchFileException e) {
            // already gone
        }
    }

    @Override
    public Counters.Source counters() {
        return counters;
    }

    private record ChannelHandle(FileChannel ch) implements Handle {
        @Override
        public void write(long pos, ByteBuffer src) throws IOException {
            long p = pos;
            while (src.hasRemaining()) {
                p += ch.write(src, p);
            }
        }

        @Override
        public int read(long pos, ByteBuffer dst) throws IOException {
            int total = 0;
            while (dst.hasRemaining()) {
                int n = ch.read(dst, pos + total);
                if (n < 0) {
                    break;
                }
                total += n;
            }
            return total;
        }

        @Override
        public void fsync() throws IOException {
            ch.force(true);
        }

        @Override
        public void close() throws IOException {
            ch.close();
        }
    }
}
