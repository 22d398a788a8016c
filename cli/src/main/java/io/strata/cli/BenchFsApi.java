package io.strata.cli;

import io.strata.bench.fs.Counters;
import io.strata.bench.fs.FsTarget;
import io.strata.client.StrataFile;
import io.strata.client.StrataFileSystem;
import io.strata.core.Status;
import io.strata.core.StrataException;
import io.strata.protocol.meta.DirEntry;
import java.io.IOException;
import java.nio.ByteBuffer;

/**
 * The Strata Java API as a target of {@code strata bench}: the same jobs as on a directory,
 * through {@link StrataFileSystem} ({@link StrataFile#write}, {@link StrataFile#read},
 * {@link StrataFile#fsync}, close), under {@code root} in the Strata namespace. Its counters are
 * the client's own meters ({@code counters}: the registry of the context it was connected in).
 */
final class BenchFsApi implements FsTarget {
    private final String name;
    private final StrataFileSystem fs;
    private final String root;
    private final Counters.Source counters;
    private final String what;

    BenchFsApi(String name, StrataFileSystem fs, String root, Counters.Source counters, String what) {
        this.name = name;
        this.fs = fs;
        this.root = root.endsWith("/") ? root.substring(0, root.length() - 1) : root;
        this.counters = counters;
        this.what = what;
    }

    private String abs(String path) {
        return root + "/" + path;
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public String describe() {
        return "Java API (StrataFileSystem) at " + (root.isEmpty() ? "/" : root) + ", " + what;
    }

    @Override
    public void mkdirs(String path) throws IOException {
        run(() -> fs.mkdirs(abs(path)), path);
    }

    @Override
    public Handle create(String path) throws IOException {
        return new FileHandle(call(() -> fs.create(abs(path)), path), path);
    }

    @Override
    public Handle open(String path) throws IOException {
        return new FileHandle(call(() -> fs.openRead(abs(path)), path), path);
    }

    @Override
    public long size(String path) throws IOException {
        return call(() -> fs.stat(abs(path)).size(), path);
    }

    @Override
    public void deleteTree(String path) throws IOException {
        run(() -> delete(abs(path)), path);
    }

    private void delete(String p) {
        io.strata.client.FileStatus st;
        try {
            st = fs.lstat(p);
        } catch (StrataException e) {
            if (e.status() == Status.NOT_FOUND) {
                return;
            }
            throw e;
        }
        if (st.isDirectory()) {
            for (DirEntry e : fs.list(p)) {
                delete(p + "/" + e.name());
            }
        }
        fs.delete(p);
    }

    @Override
    public Counters.Source counters() {
        return counters;
    }

    private interface Op<T> {
        T run();
    }

    /** Runs a client call, its StrataException (status and errno) as an IOException naming the path. */
    private static <T> T call(Op<T> op, String path) throws IOException {
        try {
            return op.run();
        } catch (StrataException e) {
            throw new IOException(path + ": " + e.getMessage(), e);
        }
    }

    /** {@link #call} for a client call that answers nothing. */
    private static void run(Runnable op, String path) throws IOException {
        call(() -> {
            op.run();
            return null;
        }, path);
    }

    private record FileHandle(StrataFile f, String path) implements Handle {
        @Override
        public void write(long pos, ByteBuffer src) throws IOException {
            run(() -> f.write(pos, src), path);
        }

        @Override
        public int read(long pos, ByteBuffer dst) throws IOException {
            return call(() -> {
                int total = 0;
                while (dst.hasRemaining()) {
                    int n = f.read(pos + total, dst);
                    if (n <= 0) {
                        break;
                    }
                    total += n;
                }
                return total;
            }, path);
        }

        @Override
        public void fsync() throws IOException {
            run(f::fsync, path);
        }

        @Override
        public void close() throws IOException {
            run(f::close, path);
        }
    }
}
