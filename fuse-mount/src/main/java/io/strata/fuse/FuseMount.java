package io.strata.fuse;

import io.micrometer.core.instrument.MeterRegistry;
import io.strata.client.StrataFileSystem;
import io.strata.config.policy.Consistency;
import io.strata.core.Status;
import io.strata.core.StrataException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A mounted Strata tree: starts libfuse's multi-threaded loop on its own thread, waits until the
 * kernel shows the mount, and unmounts (fusermount -u, then a lazy unmount if the mount is busy).
 *
 * <p><b>libfuse2 or libfuse3</b> ({@code [mount] fuse}, {@link MountOptions.Libfuse}): both
 * bindings translate to the same {@link FuseOps}; they differ in request size (libfuse2 128 KiB,
 * libfuse3 1 MiB) and in how they reach libfuse (jnr-fuse; the Java FFM API, JDK 22+).
 *
 * <p><b>Mount options.</b> {@code big_writes}, {@code max_read}/{@code max_write} of 128 KiB
 * (the most libfuse2 gets: FUSE protocol 7.19 has no {@code max_pages}; libfuse3: 1 MiB), a 1 MiB kernel readahead,
 * {@code use_ino} (st_ino is the Strata inode), {@code default_permissions} (the kernel checks
 * mode bits too) and {@code allow_other} when mounted by root. Not {@code hard_remove}: with it
 * an {@code fstat} of a file unlinked while open fails (the kernel's getattr carries no handle),
 * so libfuse keeps such a file under a hidden name, {@code .fuse_hidden*}, and removes that name
 * at the last release; if the mount dies first, the meta service removes it when it ends the
 * dead mount's sessions.
 *
 * <p><b>Timeouts.</b> The high-level libfuse2 API has one attribute and one entry timeout per
 * mount (not per reply), so they follow the consistency mode of the mounted root directory:
 * {@code strict} 0 s / 0 s, {@code close-to-open} 0 s attributes (an open sees sizes published
 * by other clients' closes at once: the kernel would otherwise keep a file's old size past the
 * open) / 1 s entries (names are resolved again by path on every open anyway), {@code immutable}
 * 60 s / 60 s. {@code [mount] attr-timeout} and {@code entry-timeout} override them. With a zero
 * attribute timeout and a non-zero entry timeout the daemon itself answers directories' and
 * files' attributes for the entry timeout, refreshing a file's at each open (see
 * {@link FuseOps}): the kernel asks for every directory on a path at each path walk, and twice
 * for a file at each stat.
 */
public final class FuseMount implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(FuseMount.class);
    private static final List<String> LIBFUSE2 = List.of("/lib/x86_64-linux-gnu/libfuse.so.2", "/usr/lib/x86_64-linux-gnu/libfuse.so.2",
            "/lib/aarch64-linux-gnu/libfuse.so.2", "/usr/lib/aarch64-linux-gnu/libfuse.so.2", "/usr/lib64/libfuse.so.2",
            "/lib64/libfuse.so.2", "/usr/lib/libfuse.so.2", "/usr/local/lib/libfuse.so.2");

    private static final List<String> LIBFUSE3 = List.of("/lib/x86_64-linux-gnu/libfuse3.so.3", "/usr/lib/x86_64-linux-gnu/libfuse3.so.3",
            "/usr/lib64/libfuse3.so.3", "/lib64/libfuse3.so.3", "/usr/lib/libfuse3.so.3", "/usr/local/lib/libfuse3.so.3");
    /** The libfuse3 binding, compiled at Java 22 from src/main/java22 and loaded by name. */
    private static final String FUSE3_BINDING = "io.strata.fuse.StrataFuse3";

    private final FuseOps fuse;
    private final Path dir;
    private final Thread loop;
    private final CompletableFuture<Integer> ended = new CompletableFuture<>();
    private final Duration attrTimeout;
    private final Duration entryTimeout;

    private FuseMount(FuseOps fuse, FuseBinding binding, Path dir, Duration attr, Duration entry, MountOptions opts) {
        this.fuse = fuse;
        this.dir = dir;
        this.attrTimeout = attr;
        this.entryTimeout = entry;
        List<String> args = opts.fuseArgs(attr, entry);
        this.loop = new Thread(() -> {
            try {
                binding.run(dir, args, opts.debug());
                ended.complete(0);
            } catch (Throwable t) {
                ended.completeExceptionally(t);
            }
        }, "fuse-loop-" + dir.getFileName());
        loop.setDaemon(true);
    }

    /** Why a libfuse2 mount cannot be made here, or empty when {@code /dev/fuse} and libfuse2 are both available. */
    public static Optional<String> unavailable() {
        return unavailable(MountOptions.Libfuse.LIBFUSE2);
    }

    /** Why a mount through {@code libfuse} cannot be made here, or empty when it can. */
    public static Optional<String> unavailable(MountOptions.Libfuse libfuse) {
        if (libfuse == MountOptions.Libfuse.LIBFUSE2) {
            return unavailable2();
        }
        Optional<String> dev = devFuse();
        if (dev.isPresent()) {
            return dev;
        }
        if (Runtime.version().feature() < 22) {
            return Optional.of("the libfuse3 mount needs JDK 22 or newer (the Java FFM API); this is JDK " + Runtime.version().feature());
        }
        if (libfuse3().isEmpty()) {
            return Optional.of("libfuse3 (libfuse3.so.3, 3.12 or newer) is not installed (Debian: apt-get install libfuse3-3)");
        }
        if (FuseMount.class.getClassLoader().getResource(FUSE3_BINDING.replace('.', '/') + ".class") == null) {
            return Optional.of("this build has no libfuse3 binding (it was built with a JDK older than 22)");
        }
        return Optional.empty();
    }

    private static Optional<String> libfuse3() {
        return LIBFUSE3.stream().filter(p -> Files.exists(Path.of(p))).findFirst();
    }

    private static Optional<String> devFuse() {
        Path dev = Path.of("/dev/fuse");
        if (!Files.exists(dev)) {
            return Optional.of("/dev/fuse does not exist (load the fuse module, or give the container --device /dev/fuse)");
        }
        if (!Files.isReadable(dev) || !Files.isWritable(dev)) {
            return Optional.of("/dev/fuse is not readable and writable by this user");
        }
        return Optional.empty();
    }

    private static Optional<String> unavailable2() {
        Optional<String> dev = devFuse();
        if (dev.isPresent()) {
            return dev;
        }
        if (LIBFUSE2.stream().noneMatch(p -> Files.exists(Path.of(p)))) {
            return Optional.of("libfuse2 (libfuse.so.2) is not installed (Debian: apt-get install fuse libfuse2)");
        }
        return Optional.empty();
    }

    /**
     * Mounts {@code fs} (its {@code opts.root()} directory) at {@code opts.dir()} and returns once
     * the kernel shows the mount. Fails with UNSUPPORTED when FUSE is not available.
     */
    public static FuseMount mount(StrataFileSystem fs, MountOptions opts, MeterRegistry meters) {
        Optional<String> why = unavailable(opts.fuse());
        if (why.isPresent()) {
            throw new StrataException(Status.UNSUPPORTED, "cannot mount: " + why.get());
        }
        Path dir;
        try {
            dir = opts.dir().toRealPath();
        } catch (IOException e) {
            throw new StrataException(Status.NOT_FOUND, "mount point " + opts.dir() + " does not exist: " + e.getMessage());
        }
        if (!Files.isDirectory(dir)) {
            throw new StrataException(Status.NOT_A_DIRECTORY, "mount point " + dir + " is not a directory");
        }
        if (isMounted(dir)) {
            throw new StrataException(Status.ALREADY_EXISTS, dir + " is already a mount point (strata umount " + dir + ")");
        }
        Consistency mode = Consistency.valueOf(fs.policy(opts.root()).effective().stream()
                .filter(s -> s.key().equals("consistency")).findFirst().orElseThrow().value().toUpperCase().replace('-', '_'));
        Duration attr = opts.attrTimeout().orElse(switch (mode) {
            case STRICT, CLOSE_TO_OPEN -> Duration.ZERO;
            case IMMUTABLE -> Duration.ofSeconds(60);
        });
        Duration entry = opts.entryTimeout().orElse(switch (mode) {
            case STRICT -> Duration.ZERO;
            case CLOSE_TO_OPEN -> Duration.ofSeconds(1);
            case IMMUTABLE -> Duration.ofSeconds(60);
        });
        FuseOps ops = new FuseOps(fs, opts.root(), meters, attr.isZero() ? entry : Duration.ZERO, entry);
        FuseMount m = new FuseMount(ops, binding(ops, opts.fuse()), dir, attr, entry, opts);
        m.loop.start();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (!isMounted(dir)) {
            if (m.ended.isDone()) {
                throw new StrataException(Status.INTERNAL, "libfuse exited before the mount appeared at " + dir
                        + (m.ended.isCompletedExceptionally() ? ": " + m.ended.exceptionNow() : ""));
            }
            if (System.nanoTime() > deadline) {
                throw new StrataException(Status.TIMEOUT, "the mount at " + dir + " did not appear within 20 s");
            }
            sleep(10);
        }
        if (opts.fuse() == MountOptions.Libfuse.LIBFUSE3) {
            readahead(dir, opts.fuse().maxRequest());
        }
        LOG.info("mounted {} at {} through {} (attr timeout {} ms, entry timeout {} ms, root consistency {})", opts.root(), dir,
                opts.fuse().configName(), attr.toMillis(), entry.toMillis(), mode.policyName());
        return m;
    }

    /**
     * Sets the kernel's readahead window of the mount at {@code dir} to {@code bytes}
     * ({@code /sys/class/bdi/MAJOR:MINOR/read_ahead_kb}; root only). The kernel takes the smaller
     * of the file system's {@code max_readahead} and the default 128 KiB at mount, so without
     * this a sequential read reaches the mount in 128 KiB requests whatever {@code max_pages}
     * allows. Best effort: where it cannot be set, reads stay at 128 KiB.
     */
    static void readahead(Path dir, int bytes) {
        String want = dir.toAbsolutePath().normalize().toString();
        try {
            for (String line : Files.readAllLines(Path.of("/proc/self/mountinfo"))) {
                String[] f = line.split(" ");
                if (f.length > 4 && unescape(f[4]).equals(want)) {
                    Files.writeString(Path.of("/sys/class/bdi", f[2], "read_ahead_kb"), Integer.toString(bytes / 1024));
                    return;
                }
            }
        } catch (IOException | RuntimeException e) {
            LOG.warn("cannot set the readahead of {} to {} KiB (reads stay at 128 KiB): {}", dir, bytes / 1024, e.toString());
        }
    }

    private static FuseBinding binding(FuseOps ops, MountOptions.Libfuse libfuse) {
        if (libfuse == MountOptions.Libfuse.LIBFUSE2) {
            return new StrataFuse(ops);
        }
        try {
            return (FuseBinding) Class.forName(FUSE3_BINDING).getDeclaredConstructor(FuseOps.class, String.class, int.class)
                    .newInstance(ops, libfuse3().orElseThrow(), libfuse.maxRequest());
        } catch (ReflectiveOperationException | LinkageError e) {
            throw new StrataException(Status.UNSUPPORTED, "cannot load the libfuse3 binding: " + e);
        }
    }

    public Path dir() {
        return dir;
    }

    public Duration attrTimeout() {
        return attrTimeout;
    }

    public Duration entryTimeout() {
        return entryTimeout;
    }

    /** Files open through the mount now. */
    public int openFiles() {
        return fuse.openFiles();
    }

    /** Completes when the file system is unmounted (by {@link #close}, {@code strata umount} or {@code fusermount -u}). */
    public CompletableFuture<Integer> unmounted() {
        return ended;
    }

    /** Whether {@code dir} is a mount point now (from {@code /proc/self/mountinfo}). */
    public static boolean isMounted(Path dir) {
        String want = dir.toAbsolutePath().normalize().toString();
        try {
            for (String line : Files.readAllLines(Path.of("/proc/self/mountinfo"))) {
                String[] f = line.split(" ");
                if (f.length > 4 && unescape(f[4]).equals(want)) {
                    return true;
                }
            }
        } catch (IOException e) {
            return false;
        }
        return false;
    }

    private static String unescape(String s) {
        return s.replace("\\040", " ").replace("\\011", "\t").replace("\\012", "\n").replace("\\134", "\\");
    }

    /**
     * Unmounts {@code dir}: {@code fusermount -u}, or with {@code lazy} (the mount is busy) a
     * lazy unmount that completes when the last file on it is closed.
     */
    public static void unmount(Path dir, boolean lazy) {
        String d = dir.toAbsolutePath().normalize().toString();
        List<List<String>> tries = new ArrayList<>();
        tries.add(lazy ? List.of("fusermount", "-u", "-z", d) : List.of("fusermount", "-u", d));
        tries.add(lazy ? List.of("umount", "-l", d) : List.of("umount", d));
        String last = "";
        for (List<String> cmd : tries) {
            try {
                Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
                String out = new String(p.getInputStream().readAllBytes()).trim();
                if (p.waitFor(20, TimeUnit.SECONDS) && p.exitValue() == 0) {
                    return;
                }
                last = String.join(" ", cmd) + ": " + out;
            } catch (IOException e) {
                last = String.join(" ", cmd) + ": " + e.getMessage();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new StrataException(Status.CANCELLED, "interrupted while unmounting " + d);
            }
        }
        if (!isMounted(dir)) {
            return;
        }
        throw new StrataException(Status.INTERNAL, "cannot unmount " + d + " (" + last + ")" + (lazy ? "" : "; is it busy? try --lazy"));
    }

    /** Unmounts (lazily if busy), waits for libfuse's loop to end, then closes files left open. */
    @Override
    public void close() {
        if (isMounted(dir)) {
            try {
                unmount(dir, false);
            } catch (StrataException e) {
                LOG.warn("{}; unmounting lazily", e.getMessage());
                unmount(dir, true);
            }
        }
        try {
            ended.get(20, TimeUnit.SECONDS);
        } catch (Exception e) {
            LOG.warn("libfuse loop of {} did not end cleanly: {}", dir, e.toString());
        }
        fuse.closeAll();
    }

    private static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new StrataException(Status.CANCELLED, "interrupted");
        }
    }
}
