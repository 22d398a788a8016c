package io.strata.l1;

import static org.assertj.core.api.Assertions.assertThat;

import io.strata.core.ChunkId;
import io.strata.core.DataSize;
import io.strata.core.InodeId;
import io.strata.core.NodeContext;
import io.strata.core.tier.CacheHints;
import io.strata.core.tier.ChunkAddress;
import io.strata.core.tier.IoOptions;
import io.strata.core.util.Futures;
import io.strata.testing.Seeded;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Model-based test of L1's consistency at the tier level: two L1 instances (two clients, each
 * with its own memory and NVMe tiers) over one shared lower tier run random reads, writes,
 * truncates, removes, fsyncs, reopens, restarts and rewrites by a third party, and every read is
 * checked against a model of what the directory's consistency mode allows.
 *
 * <p>The model plays the namespace's part: the file's data version goes up when a client closes
 * or fsyncs it after writing, on every truncate or remove, and when a third party rewrites it; a
 * client reads and writes under the data version it opened. The lower tier records the content of
 * each chunk after every change (a history). A read of a cache block must then return the chunk
 * as it was at some moment since the later of (a) the moment the client's data version became
 * current and (b) the client's own last change of that chunk under that version; with the
 * client's own unflushed writes (write-back) laid over it. So:
 * <ul>
 * <li><b>strict</b>: every read returns exactly what the lower tier holds now;</li>
 * <li><b>close-to-open</b>: after a reopen, never anything older than the last close; a client
 * always sees its own writes;</li>
 * <li><b>write-back</b> (one writer): the writer sees its absorbed writes at once; the reader as
 * close-to-open;</li>
 * <li><b>immutable</b>: written once and closed, then every read, across restarts, is exact.</li>
 * </ul>
 */
class L1ModelTest {
    static final long INODE = 900;
    static final int CHUNK = 64 * 1024;
    static final int BLOCK = 8 * 1024;
    static final int CHUNKS = 2;

    enum Mode { STRICT, CLOSE_TO_OPEN, WRITE_BACK, IMMUTABLE }

    @TempDir
    Path dir;

    /** The lower tier's history: the content of each chunk after every change, in order. */
    static final class History implements FileTier.Listener {
        long seq;
        final Map<Integer, List<long[]>> changes = new HashMap<>();   // chunk -> [seq, index into contents]
        final List<byte[]> contents = new ArrayList<>();

        History() {
            for (int c = 0; c < CHUNKS; c++) {
                contents.add(new byte[0]);
                List<long[]> l = new ArrayList<>();
                l.add(new long[]{0, contents.size() - 1});
                changes.put(c, l);
            }
        }

        @Override
        public synchronized void changed(ChunkId chunk, byte[] content) {
            seq++;
            contents.add(content == null ? new byte[0] : content.clone());
            changes.get(chunk.index()).add(new long[]{seq, contents.size() - 1});
        }

        synchronized long now() {
            return seq;
        }

        /** The chunk's contents at every moment in [from, now]. */
        synchronized List<byte[]> since(int chunk, long from) {
            List<long[]> l = changes.get(chunk);
            List<byte[]> out = new ArrayList<>();
            for (int i = l.size() - 1; i >= 0; i--) {
                out.add(contents.get((int) l.get(i)[1]));
                if (l.get(i)[0] <= from) {
                    break;
                }
            }
            return out;
        }

        synchronized byte[] current(int chunk) {
            List<long[]> l = changes.get(chunk);
            return contents.get((int) l.get(l.size() - 1)[1]);
        }
    }

    /** One client: its L1, the data version it opened, and what the model knows of its writes. */
    final class Client {
        final String name;
        final NodeContext ctx;
        L1Tier l1;
        long dv;
        boolean wrote;
        final List<long[]> pendingMeta = new ArrayList<>();  // [chunk, offset] of absorbed writes not yet fsynced
        final List<byte[]> pendingData = new ArrayList<>();
        final Map<String, Long> floor = new HashMap<>();     // "dv/chunk" -> history seq of its last own change

        Client(String name, long seed) {
            this.name = name;
            this.ctx = NodeContext.seeded(name, seed);
            this.l1 = open();
        }

        L1Tier open() {
            L1Config cfg = Fixture.config(name, DataSize.ofBytes(5L * (BLOCK + MemoryTier.OVERHEAD)), DataSize.ofBytes(BLOCK),
                    dir.resolve(name), DataSize.ofBytes(24 * NvmeStore.footprint(BLOCK)));
            return new L1Tier(ctx, cfg, below);
        }

        long lowerBound(int chunk) {
            return Math.max(dvStart.get(dv), floor.getOrDefault(dv + "/" + chunk, 0L));
        }

        void ownChange(int chunk) {
            floor.put(dv + "/" + chunk, history.now());
        }
    }

    FileTier below;
    History history;
    long fileVersion = 1;
    final Map<Long, Long> dvStart = new HashMap<>();
    Mode mode;
    CacheHints hints;
    int checkedReads;

    private ChunkAddress chunk(int c) {
        return Fixture.chunk(INODE, c, CHUNK);
    }

    private IoOptions io(Client x) {
        return Fixture.io(x.dv, hints);
    }

    private void bump() {
        fileVersion++;
        dvStart.put(fileVersion, history.now());
    }

    private void reopen(Client x) {
        Futures.join(x.l1.flushAsync(InodeId.of(INODE), io(x)), Fixture.T);
        fsynced(x);
        if (x.wrote) {
            bump();
        }
        x.wrote = false;
        x.dv = fileVersion;
    }

    private void fsynced(Client x) {
        for (long[] m : x.pendingMeta) {
            x.ownChange((int) m[0]);
        }
        x.pendingMeta.clear();
        x.pendingData.clear();
    }

    @ParameterizedTest(name = "{0}")
    @EnumSource(Mode.class)
    @Seeded
    void readsMatchWhatTheModeAllows(Mode m, long seed) {
        mode = m;
        hints = switch (m) {
            case STRICT -> CacheHints.BYPASS;
            case CLOSE_TO_OPEN, IMMUTABLE -> CacheHints.DEFAULT;
            case WRITE_BACK -> new CacheHints(true, true, Duration.ofMillis(20), 16 * 1024, false, Optional.empty());
        };
        Random r = new Random(seed);
        history = new History();
        below = new FileTier(dir.resolve("below"), false);
        below.listener = history;
        dvStart.put(1L, 0L);
        Client a = new Client("a", seed);
        Client b = new Client("b", seed + 1);
        a.dv = 1;
        b.dv = 1;
        try {
            if (m == Mode.IMMUTABLE) {
                for (int c = 0; c < CHUNKS; c++) {
                    write(a, c, 0, Fixture.bytes(r.nextLong(), 10_000 + r.nextInt(CHUNK - 10_000)));
                }
                reopen(a);
                reopen(b);
            }
            for (int step = 0; step < 400; step++) {
                Client x = r.nextBoolean() ? a : b;
                int c = r.nextInt(CHUNKS);
                int op = r.nextInt(100);
                boolean writer = m != Mode.IMMUTABLE && (m != Mode.WRITE_BACK || x == a);
                if (op < 45 || !writer && op < 85) {
                    int off = r.nextInt(CHUNK);
                    int len = 1 + r.nextInt(Math.min(CHUNK - off, 3 * BLOCK));
                    checkRead(x, c, off, len);
                } else if (op < 70 && writer) {
                    int off = r.nextInt(CHUNK - 1);
                    int len = 1 + r.nextInt(Math.min(CHUNK - off, r.nextInt(4) == 0 ? 3 * BLOCK : 600));
                    write(x, c, off, Fixture.bytes(r.nextLong(), len));
                } else if (op < 74 && writer) {
                    int len = r.nextInt(CHUNK);
                    Futures.join(x.l1.truncateAsync(chunk(c), len, io(x)), Fixture.T);
                    fsynced(x);
                    bump();
                    x.wrote = false;
                    x.dv = fileVersion;
                } else if (op < 76 && writer) {
                    Futures.join(x.l1.removeAsync(chunk(c), io(x)), Fixture.T);
                    fsynced(x);
                    bump();
                    x.wrote = false;
                    x.dv = fileVersion;
                } else if (op < 82 && writer) {
                    Futures.join(x.l1.flushAsync(InodeId.of(INODE), io(x)), Fixture.T);
                    fsynced(x);
                    if (x.wrote) {
                        bump(); // fsync after writes publishes them: a new data version
                        x.wrote = false;
                    }
                } else if (op < 92) {
                    reopen(x);
                } else if (op < 96) {
                    reopen(x);   // a restart: close (flush) and open the cache again on its NVMe directory
                    x.l1.close();
                    x.l1 = x.open();
                } else if (m != Mode.IMMUTABLE && (m != Mode.WRITE_BACK || a.pendingMeta.isEmpty())) {
                    // a third client rewrites the chunk and closes it
                    byte[] content = Fixture.bytes(r.nextLong(), r.nextInt(CHUNK));
                    Futures.join(below.removeAsync(chunk(c), io(x)), Fixture.T);
                    Fixture.write(below, chunk(c), 0, content, Fixture.io(fileVersion));
                    bump();
                }
            }
            reopen(a);
            reopen(b);
            for (int c = 0; c < CHUNKS; c++) {
                assertThat(Fixture.read(a.l1, chunk(c), 0, CHUNK, io(a))).as("final content of chunk %d", c).isEqualTo(history.current(c));
                assertThat(Fixture.read(b.l1, chunk(c), 0, CHUNK, io(b))).isEqualTo(history.current(c));
            }
            assertThat(checkedReads).isGreaterThan(100);
        } finally {
            a.l1.close();
            b.l1.close();
            below.close();
            a.ctx.close();
            b.ctx.close();
        }
    }

    private void write(Client x, int c, int off, byte[] data) {
        Fixture.write(x.l1, chunk(c), off, data, io(x));
        x.wrote = true;
        if (mode == Mode.WRITE_BACK) {
            x.pendingMeta.add(new long[]{c, off});
            x.pendingData.add(data);
        } else {
            x.ownChange(c);
        }
    }

    private void checkRead(Client x, int c, int off, int len) {
        long from = mode == Mode.STRICT ? history.now() : x.lowerBound(c);
        byte[] got = Fixture.read(x.l1, chunk(c), off, len, io(x));
        List<byte[]> allowed = new ArrayList<>();
        for (byte[] s : history.since(c, from)) {
            allowed.add(overlay(s, x, c));
        }
        String problem = matches(got, allowed, off, len);
        assertThat(problem).as("%s read of chunk %d [%d, %d) by %s at dv %d (file at dv %d), %d allowed contents",
                mode, c, off, off + len, x.name, x.dv, fileVersion, allowed.size()).isNull();
        checkedReads++;
    }

    private static byte[] overlay(byte[] base, Client x, int c) {
        byte[] out = base;
        for (int i = 0; i < x.pendingMeta.size(); i++) {
            if (x.pendingMeta.get(i)[0] != c) {
                continue;
            }
            int off = (int) x.pendingMeta.get(i)[1];
            byte[] d = x.pendingData.get(i);
            if (off + d.length > out.length) {
                out = Arrays.copyOf(out, off + d.length);
            } else if (out == base) {
                out = base.clone();
            }
            System.arraycopy(d, 0, out, off, d.length);
        }
        return out;
    }

    /**
     * Null if {@code got} is a read of [off, off+len) in which each cache block comes from one of
     * the allowed contents (a block shorter than BLOCK ends the read), else what is wrong.
     */
    static String matches(byte[] got, List<byte[]> allowed, int off, int len) {
        int end = off + len;
        int pos = off;
        for (int b = off / BLOCK; b * BLOCK < end; b++) {
            int bstart = b * BLOCK;
            boolean ok = false;
            boolean stop = false;
            int next = pos;
            for (byte[] content : allowed) {
                int n = Math.max(0, Math.min(BLOCK, content.length - bstart));
                int segEnd = Math.max(pos, Math.min(end, bstart + n));
                boolean ends = n < BLOCK || segEnd == end;
                if (ends ? got.length != segEnd - off : got.length < segEnd - off) {
                    continue;
                }
                if (segEnd > pos && !Arrays.equals(got, pos - off, segEnd - off, content, pos, segEnd)) {
                    continue;
                }
                ok = true;
                stop = ends;
                next = segEnd;
                break;
            }
            if (!ok) {
                return "block " + b + " (bytes from " + pos + ") matches none of the allowed contents; read returned " + got.length + " bytes";
            }
            pos = next;
            if (stop) {
                return null;
            }
        }
        return got.length == pos - off ? null : "read returned " + got.length + " bytes, expected " + (pos - off);
    }
}
