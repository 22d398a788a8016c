package io.strata.cli;

import io.strata.store.AtomicFiles;
import io.strata.store.PrivateFiles;
import java.io.IOException;
import java.io.Reader;
import java.io.StringWriter;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.OverlappingFileLockException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Properties;
import java.util.function.UnaryOperator;

/**
 * The data directory of a local cluster started by {@code strata up}:
 * <pre>
 * DATA/
 *   up.properties      what runs: each daemon's pid, address and log (written by up, removed by down)
 *   logs/NAME.log      each daemon's output
 *   NAME/              each daemon's own state, its NAME.toml and its ready.properties
 * </pre>
 * Everything in it is private to the user running {@code strata up} ({@link #claim}): the
 * directories 0700, the files 0600.
 */
final class ClusterDir {
    static final String STATE = "up.properties";
    /** The environment variable naming the data directory when {@code --data} is not given. */
    static final String ENV = "STRATA_DATA";
    final Path root;

    ClusterDir(Path root) {
        this.root = root.toAbsolutePath().normalize();
    }

    /** {@code --data} if given, else {@code $STRATA_DATA}, else {@code data/} in the Strata checkout. */
    static ClusterDir resolve(Path data) {
        return resolve(data, System::getenv);
    }

    /** As above, with the environment variables from {@code env} (tests). */
    static ClusterDir resolve(Path data, UnaryOperator<String> env) {
        if (data != null) {
            return new ClusterDir(data);
        }
        String dir = env.apply(ENV);
        if (dir != null && !dir.isBlank()) {
            return new ClusterDir(Path.of(dir));
        }
        String home = System.getProperty("strata.home");
        return new ClusterDir(home != null ? Path.of(home, "data") : Path.of("strata-data"));
    }

    Path logs() {
        return root.resolve("logs");
    }

    Path daemonDir(String name) {
        return root.resolve(name);
    }

    /** One daemon of the cluster as {@code up} recorded it. */
    record Member(String name, long pid, String rpc, Path log) {
    }

    List<Member> members() throws IOException {
        Path f = root.resolve(STATE);
        List<Member> out = new ArrayList<>();
        if (!Files.exists(f)) {
            return out;
        }
        Properties p = new Properties();
        try (Reader r = Files.newBufferedReader(f)) {
            p.load(r);
        }
        for (String name : p.getProperty("members", "").split(",")) {
            if (name.isBlank()) {
                continue;
            }
            out.add(new Member(name, Long.parseLong(p.getProperty(name + ".pid", "0")),
                    p.getProperty(name + ".rpc", ""), Path.of(p.getProperty(name + ".log", ""))));
        }
        return out;
    }

    void writeMembers(List<Member> members) throws IOException {
        Properties p = new Properties();
        List<String> names = new ArrayList<>();
        for (Member m : members) {
            names.add(m.name());
            p.setProperty(m.name() + ".pid", String.valueOf(m.pid()));
            p.setProperty(m.name() + ".rpc", m.rpc());
            p.setProperty(m.name() + ".log", m.log().toString());
        }
        p.setProperty("members", String.join(",", names));
        StringWriter w = new StringWriter();
        p.store(w, "the daemons of this local cluster; strata down stops them");
        AtomicFiles.plain().write(root.resolve(STATE), w.toString(), false);
    }

    void clearMembers() throws IOException {
        Files.deleteIfExists(root.resolve(STATE));
    }

    /** Whether {@code pid} is a live Strata process (not some other process that reused the pid). */
    static boolean alive(long pid) {
        Optional<ProcessHandle> h = ProcessHandle.of(pid);
        if (h.isEmpty() || !h.get().isAlive()) {
            return false;
        }
        try {
            String cmdline = Files.readString(Path.of("/proc", String.valueOf(pid), "cmdline"));
            return cmdline.contains("io.strata.cli.StrataMain");
        } catch (IOException e) {
            return h.get().info().commandLine().map(c -> c.contains("io.strata.cli.StrataMain")).orElse(true);
        }
    }

    /**
     * Makes the directory ready for {@code strata up}: refused when users other than its owner
     * may write it (they could plant or swap the config files and state the daemons trust, and a
     * shared place such as {@code /tmp} is not ours to chmod), otherwise created, or tightened,
     * 0700 together with its logs directory, so that all the cluster writes under it (the
     * daemons' logs included, whatever modes they are made with) is this user's alone.
     */
    void claim() throws IOException {
        if (Files.exists(root)) {
            PrivateFiles.requireNotWritableByOthers(root);
        }
        PrivateFiles.createDirectories(root);
        PrivateFiles.createDirectories(logs());
    }

    /** Takes the directory's lock for the length of one up/down, so two cannot interleave. */
    AutoCloseable lock() throws IOException {
        PrivateFiles.createDirectories(root);
        FileChannel ch = PrivateFiles.open(root.resolve(".lock"), StandardOpenOption.CREATE, StandardOpenOption.WRITE);
        FileLock lock;
        try {
            lock = ch.tryLock();
        } catch (OverlappingFileLockException e) {
            lock = null;
        }
        if (lock == null) {
            ch.close();
            throw new IllegalStateException("another strata up/down is working on " + root + " right now");
        }
        FileLock held = lock;
        return () -> {
            held.release();
            ch.close();
        };
    }
}
