package io.strata.client;

import io.netty.buffer.ByteBuf;
import io.strata.core.InodeId;
import io.strata.core.Status;
import io.strata.core.StrataException;
import io.strata.core.tier.IoOptions;
import io.strata.core.util.Futures;
import io.strata.protocol.meta.Caller;
import io.strata.protocol.meta.Checkpoint;
import io.strata.protocol.meta.Checkpoint.Durability;
import io.strata.protocol.meta.Checkpoint.Entry;
import io.strata.protocol.meta.Checkpoint.Generation;
import io.strata.protocol.meta.Checkpoint.Level;
import io.strata.protocol.meta.InodeType;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.function.Consumer;
import java.util.zip.CRC32C;

/**
 * Checkpoint generations from Java (docs/checkpoints.md): commit a generation directory, wait
 * for a level, find the latest, list, pin, verify. Paths are paths in the namespace.
 * Obtained from {@link StrataFileSystem#checkpoints()}; thread-safe.
 */
public final class Checkpoints {
    /** How long a commit waits for files still open for writing to be closed before it refuses. */
    public static final Duration BUSY_WAIT = Duration.ofSeconds(10);
    /** How often a wait asks how far a generation has come. */
    static final Duration POLL = Duration.ofMillis(100);

    private final StrataFileSystem fs;
    private final ClientCore core;
    private final Caller caller;

    Checkpoints(StrataFileSystem fs, ClientCore core, Caller caller) {
        this.fs = fs;
        this.core = core;
        this.caller = caller;
    }

    /**
     * Commits generation {@code gen} and returns once it is at {@code level}. Files still open for
     * writing are waited for up to {@code busyWait} (a writer's close through a mount reaches the
     * namespace a moment after close(2) returns), then the commit is refused with FILE_BUSY.
     * {@code expected} (may be empty) lists files that must be there with these sizes.
     *
     * @param progress told of the generation each time its durability moves (may be null)
     */
    public Generation commit(String gen, Level level, List<Checkpoint.Expected> expected, Duration busyWait, Duration timeout,
                             Consumer<Generation> progress) {
        InodeId dir = dirOf(gen);
        long deadline = System.nanoTime() + busyWait.toNanos();
        Generation g;
        while (true) {
            try {
                g = join(core.meta().ckptCommitAsync(caller, dir, level, expected, null));
                break;
            } catch (StrataException e) {
                if (e.status() != Status.FILE_BUSY || System.nanoTime() > deadline) {
                    throw e;
                }
                sleep(Duration.ofMillis(200));
            }
        }
        return await(dir, g, level, timeout, progress);
    }

    public Generation commit(String gen, Level level) {
        return commit(gen, level, List.of(), BUSY_WAIT, Duration.ofHours(1), null);
    }

    /** Waits until committed generation {@code gen} is at {@code level}; TIMEOUT after {@code timeout}. */
    public Generation await(String gen, Level level, Duration timeout, Consumer<Generation> progress) {
        InodeId dir = dirOf(gen);
        return await(dir, join(core.meta().ckptStatusAsync(caller, dir)), level, timeout, progress);
    }

    private Generation await(InodeId dir, Generation g, Level level, Duration timeout, Consumer<Generation> progress) {
        long deadline = System.nanoTime() + timeout.toNanos();
        Durability told = null;
        while (true) {
            if (!g.committed()) {
                throw new StrataException(Status.INVALID_ARGUMENT, "checkpoint generation \"" + g.name() + "\" is "
                        + (g.state() == Checkpoint.State.WRITING ? "not committed" : "being removed") + ": nothing to wait for");
            }
            if (progress != null && g.durability() != told) {
                progress.accept(g);
                told = g.durability();
            }
            if (g.durability().reaches(level)) {
                return g;
            }
            if (g.durability() == Durability.LOST) {
                throw new StrataException(Status.DATA_LOST, "checkpoint generation \"" + g.name()
                        + "\": a file's L2 copies were lost before it reached L3 (strata admin l2 names it)");
            }
            if (System.nanoTime() > deadline) {
                throw new StrataException(Status.TIMEOUT, "checkpoint generation \"" + g.name() + "\" is " + g.durability().text()
                        + ", not " + level.text() + ", after " + timeout.toSeconds() + " s");
            }
            sleep(POLL);
            g = join(core.meta().ckptStatusAsync(caller, dir));
        }
    }

    public Generation status(String gen) {
        return join(core.meta().ckptStatusAsync(caller, dirOf(gen)));
    }

    /** Every generation of root {@code root}: committed ones in commit order, then those being written or removed. */
    public List<Generation> list(String root) {
        return join(core.meta().ckptListAsync(caller, dirOf(root)));
    }

    /** The newest committed generation of {@code root}, if any. */
    public Optional<Generation> latest(String root) {
        Generation best = null;
        for (Generation g : list(root)) {
            if (g.committed() && (best == null || g.seq() > best.seq())) {
                best = g;
            }
        }
        return Optional.ofNullable(best);
    }

    /** The path of generation {@code g} under {@code root}. */
    public static String pathOf(String root, Generation g) {
        return (root.endsWith("/") ? root : root + "/") + g.name();
    }

    public Generation pin(String gen, boolean on) {
        return join(core.meta().ckptPinAsync(caller, dirOf(gen), on, null));
    }

    /** Every manifest entry of committed generation {@code gen}. */
    public List<Entry> manifest(String gen) {
        InodeId dir = dirOf(gen);
        List<Entry> out = new ArrayList<>();
        String after = "";
        while (true) {
            Checkpoint.ManifestPage p = join(core.meta().ckptManifestAsync(caller, dir, after, 1000));
            out.addAll(p.entries());
            if (!p.more() || p.entries().isEmpty()) {
                return out;
            }
            after = p.entries().get(p.entries().size() - 1).path();
        }
    }

    /** What {@link #verify} found: files checked, bytes read, and every difference from the manifest. */
    public record Verified(int files, long bytes, int withoutCrc, List<String> problems) {
        public boolean ok() {
            return problems.isEmpty();
        }
    }

    /**
     * Reads every file of committed generation {@code gen} and checks it against the manifest:
     * present, the same size, the same CRC32C where the manifest has one.
     *
     * @param progress told of each file once checked (may be null)
     */
    public Verified verify(String gen, Consumer<String> progress) {
        Generation g = status(gen);
        if (!g.committed()) {
            throw new StrataException(Status.INVALID_ARGUMENT, "checkpoint generation \"" + g.name() + "\" is not committed: no manifest");
        }
        String base = gen.endsWith("/") ? gen : gen + "/";
        List<String> problems = new ArrayList<>();
        int files = 0;
        int noCrc = 0;
        long bytes = 0;
        for (Entry e : manifest(gen)) {
            if (e.type() != InodeType.FILE) {
                continue;
            }
            files++;
            String path = base + e.path();
            try (StrataFile f = fs.openRead(path)) {
                if (!f.inode().equals(e.inode())) {
                    problems.add(e.path() + ": replaced by another file");
                    continue;
                }
                CRC32C crc = new CRC32C();
                long n = 0;
                int unit = 4 << 20;
                while (true) {
                    ByteBuf b = Futures.join(f.readAsync(n, unit), core.config().ioTimeout().plusSeconds(1));
                    try {
                        if (!b.isReadable()) {
                            break;
                        }
                        for (java.nio.ByteBuffer bb : b.nioBuffers()) {
                            crc.update(bb);
                        }
                        n += b.readableBytes();
                    } finally {
                        b.release();
                    }
                }
                bytes += n;
                if (n != e.size()) {
                    problems.add(e.path() + ": " + n + " bytes, the manifest says " + e.size());
                } else if (!e.hasCrc()) {
                    noCrc++;
                } else if (crc.getValue() != e.crc()) {
                    problems.add(e.path() + ": CRC32C " + Long.toHexString(crc.getValue()) + ", the manifest says " + Long.toHexString(e.crc()));
                }
            } catch (StrataException ex) {
                problems.add(e.path() + ": " + ex.getMessage());
            }
            if (progress != null) {
                progress.accept(e.path());
            }
        }
        return new Verified(files, bytes, noCrc, problems);
    }

    /** What {@link #stage} did. */
    public record Staged(int files, int stagedFiles, int l3Only, int presentChunks, int fetchedChunks, long fetchedBytes) {
    }

    /**
     * Warms committed generation {@code gen} in the L2 pool before a restore: every chunk its
     * staged files wrote is made present on its L2 holders again (a holder that evicted its copy
     * after the drain fetches it back from L3), so the restore reads from L2. Files that were never
     * staged stay in L3.
     *
     * @param progress told of each file once warmed (may be null)
     */
    public Staged stage(String gen, Consumer<String> progress) {
        io.strata.core.tier.StagingControl l2 = fs.facet(io.strata.core.tier.StagingControl.class).orElseThrow(() -> new StrataException(Status.UNSUPPORTED,
                "this client has no L2 tier: no L2 agent is configured for it"));
        Generation g = status(gen);
        if (!g.committed()) {
            throw new StrataException(Status.INVALID_ARGUMENT, "checkpoint generation \"" + g.name() + "\" is not committed");
        }
        int files = 0;
        int staged = 0;
        int l3Only = 0;
        int present = 0;
        int fetched = 0;
        long bytes = 0;
        IoOptions opts = IoOptions.DEFAULT;
        for (Entry e : manifest(gen)) {
            if (e.type() != InodeType.FILE || e.size() == 0) {
                continue;
            }
            files++;
            var a = join(core.meta().getattrAsync(caller, e.inode()));
            var w = Futures.join(l2.warmAsync(e.inode(), i -> ChunkIo.address(e.inode(), a.layout(), i), opts),
                    core.config().ioTimeout().multipliedBy(4));
            if (!w.staged()) {
                l3Only++;
            } else {
                staged++;
                present += w.present();
                fetched += w.fetched();
                bytes += w.fetchedBytes();
            }
            if (progress != null) {
                progress.accept(e.path() + (w.staged() ? ": " + w.present() + " chunk copies in L2, " + w.fetched() + " fetched back" : ": L3 only"));
            }
        }
        return new Staged(files, staged, l3Only, present, fetched, bytes);
    }

    private InodeId dirOf(String path) {
        FileStatus st = join(fs.statAsync(path));
        if (!st.isDirectory()) {
            throw new StrataException(Status.NOT_A_DIRECTORY, "\"" + path + "\" is not a directory");
        }
        return st.inode();
    }

    private <T> T join(CompletableFuture<T> f) {
        return Futures.join(f, core.config().metaTimeout().plusSeconds(1));
    }

    private static void sleep(Duration d) {
        try {
            Thread.sleep(d.toMillis());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new StrataException(Status.CANCELLED, "interrupted while waiting for a checkpoint");
        }
    }
}
