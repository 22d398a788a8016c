package io.strata.fuse;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.strata.client.FileStatus;
import io.strata.client.StrataFileSystem;
import io.strata.core.ChunkId;
import io.strata.core.DataSize;
import io.strata.core.tier.ChunkAddress;
import io.strata.core.tier.IoOptions;
import io.strata.core.util.Futures;
import io.strata.l1.L1Config;
import io.strata.core.util.Eventually;
import io.strata.harness.StorageCluster;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.UserDefinedFileAttributeView;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.SplittableRandom;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The mount's L1 cache through its virtual extended attributes ({@code user.strata.cache},
 * {@code user.strata.cache.drop}), read and set as {@code strata cache stat|drop} does (Java's
 * UserDefinedFileAttributeView through the kernel): hits and cached bytes of a re-read file, a
 * drop after which the file is read again from below, a drop of a write-back directory that
 * flushes the absorbed writes to L3 first, pin and TTL from the policy, and virtual attributes
 * that {@code cp -a} / {@code rsync -X} do not copy.
 */
@RequiresFuse
class CacheXattrsIT {
    @TempDir
    static Path dir;
    static MountedCluster c;
    static Path mnt;

    @BeforeAll
    static void start() throws IOException {
        Path nvme = Files.createDirectories(dir.resolve("l1-nvme"));
        L1Config l1 = L1Config.memoryOnly(DataSize.ofMiB(64)).withName("it-l1").withSweepInterval(Duration.ofMillis(200))
                .withNvme(L1Config.Nvme.at(nvme, DataSize.ofMiB(256)).withMinFree(DataSize.ofMiB(64)).withFsync(false));
        // no client write gathering: each write(2) reaches L1 as it is (so write-back absorbs it)
        c = MountedCluster.start(dir.resolve("cluster"), 91, StorageCluster.Mode.IN_PROCESS,
                cfg -> cfg.withL1(l1).withWriteBuffer(DataSize.ZERO, DataSize.ofMiB(64)));
        mnt = c.mnt;
    }

    @AfterAll
    static void stop() {
        if (c != null) {
            c.close();
        }
    }

    /** {@code user.strata.cache} of {@code p}, by path as {@code strata cache stat} reads it (opening nothing). */
    static Map<String, String> stats(Path p) throws IOException {
        Map<String, String> m = new LinkedHashMap<>();
        for (String line : new String(PathXattrs.get(p, "user.strata.cache"), StandardCharsets.UTF_8).split("\n")) {
            int eq = line.indexOf('=');
            m.put(line.substring(0, eq), line.substring(eq + 1));
        }
        return m;
    }

    static long num(Map<String, String> m, String key) {
        assertThat(m).containsKey(key);
        return Long.parseLong(m.get(key));
    }

    static void drop(Path p) throws IOException {
        PathXattrs.set(p, "user.strata.cache.drop", "1");
    }

    static byte[] random(int n, long seed) {
        byte[] b = new byte[n];
        SplittableRandom r = new SplittableRandom(seed);
        for (int i = 0; i < n; i++) {
            b[i] = (byte) r.nextInt(256);
        }
        return b;
    }

    /** Reads the file with O_DIRECT (no page cache: every byte asked of the mount) and returns its SHA-256. */
    static String directRead(Path f) {
        String out = Sh.run(f.getParent(), "bash", "-c", "dd if='" + f + "' bs=128k iflag=direct status=none | sha256sum").ok().out();
        return out.split(" ")[0];
    }

    @Test
    void aReReadFileShowsHitsAndCachedBytesAndADropSendsTheNextReadBelow() throws IOException {
        Path d = Files.createDirectories(mnt.resolve("hot"));
        int size = 3 * (1 << 20) + 5; // 4 blocks of 1 MiB (the last one 5 bytes)
        byte[] data = random(size, 1);
        Path f = d.resolve("weights.bin");
        write("/hot/weights.bin", data);
        String sum = Sh.sha256(local(data));

        Map<String, String> m0 = stats(mnt);
        assertThat(m0).containsEntry("l1", "on").containsEntry("scope", "mount").containsEntry("cache", "it-l1");
        assertThat(num(m0, "memory.capacity")).isEqualTo(64L << 20);
        assertThat(num(m0, "nvme.capacity")).isEqualTo(256L << 20);

        assertThat(directRead(f)).isEqualTo(sum);
        Map<String, String> m1 = stats(mnt);
        long fetched = num(m1, "misses") - num(m0, "misses");
        assertThat(fetched).as("blocks fetched from below by the first read").isGreaterThanOrEqualTo(4);

        assertThat(directRead(f)).isEqualTo(sum);
        Map<String, String> m2 = stats(mnt);
        assertThat(num(m2, "misses")).as("the second read fetched nothing from below").isEqualTo(num(m1, "misses"));
        assertThat(num(m2, "hits.memory") - num(m1, "hits.memory")).as("the second read's memory hits").isGreaterThanOrEqualTo(4);

        Map<String, String> fs = stats(f);
        assertThat(fs).containsEntry("scope", "file").containsEntry("policy.cached", "yes").containsEntry("policy.pin", "off");
        assertThat(num(fs, "size")).isEqualTo(size);
        assertThat(num(fs, "memory.bytes")).isEqualTo(size);
        assertThat(num(fs, "memory.blocks")).isEqualTo(4);
        Eventually.await("the file's blocks written to NVMe", Duration.ofSeconds(10), () -> nvmeBytes(f) == size);

        drop(f);
        Map<String, String> gone = stats(f);
        assertThat(num(gone, "memory.bytes")).isZero();
        assertThat(num(gone, "nvme.bytes")).isZero();
        assertThat(num(gone, "memory.blocks") + num(gone, "nvme.blocks")).isZero();

        // an ordinary read (page cache allowed): the drop also made the kernel forget its pages
        long before = num(stats(mnt), "misses");
        assertThat(Sh.sha256(f)).isEqualTo(sum);
        assertThat(num(stats(mnt), "misses") - before).as("blocks fetched from below after the drop").isGreaterThanOrEqualTo(4);
        assertThat(num(stats(f), "memory.bytes")).isEqualTo(size);

        // the whole cache, from the mount's root
        drop(mnt);
        Map<String, String> empty = stats(mnt);
        assertThat(num(empty, "memory.bytes")).isZero();
        assertThat(num(empty, "nvme.bytes")).isZero();
        assertThat(num(stats(f), "memory.bytes")).isZero();
        assertThat(directRead(f)).isEqualTo(sum);
    }

    /**
     * Writes a file through the mount's own client (the same L1 as the mount; one call per chunk
     * instead of a FUSE request per 128 KiB: this mount sends every write through unbuffered).
     */
    static void write(String path, byte[] data) {
        try (var h = c.fs.create(path)) {
            h.write(0, data, 0, data.length);
        }
    }

    static long nvmeBytes(Path f) {
        try {
            return num(stats(f), "nvme.bytes");
        } catch (IOException e) {
            throw new AssertionError(e);
        }
    }

    static Path local(byte[] data) throws IOException {
        Path p = Files.createTempFile(dir, "expected", ".bin");
        Files.write(p, data);
        return p;
    }

    @Test
    void droppingAWriteBackDirectoryFlushesItsAbsorbedWritesToL3First() throws IOException {
        Path d = Files.createDirectories(mnt.resolve("wb"));
        c.fs.setPolicy("/wb", "write-back=on", "write-back.max-age=1h", "write-back.max-bytes=64MiB");
        Path f = d.resolve("log.bin");
        byte[] data = random(16 * 4096, 2);
        try (StrataFileSystem other = c.client("no-l1"); FileChannel ch = FileChannel.open(f, StandardOpenOption.CREATE_NEW,
                StandardOpenOption.WRITE)) {
            for (int i = 0; i < 16; i++) {
                ch.write(ByteBuffer.wrap(data, i * 4096, 4096), (long) i * 4096);
            }
            Map<String, String> absorbed = stats(f);
            assertThat(absorbed).containsEntry("policy.write-back", "on");
            assertThat(num(absorbed, "writeback.bytes")).as("absorbed, not yet below").isEqualTo(data.length);
            assertThat(num(stats(mnt), "writeback.files")).isGreaterThanOrEqualTo(1);
            FileStatus st = other.stat("/wb/log.bin");
            ChunkAddress chunk0 = new ChunkAddress(new ChunkId(st.inode(), 0), st.layout().chainOf(0), st.layout().chunkSize());
            assertThat(l3(other, chunk0, data.length)).as("L3 before the drop").isNotEqualTo(data);

            drop(d); // the directory: every file under it (the file is still open for writing)

            Map<String, String> after = stats(f);
            assertThat(num(after, "writeback.writes")).isZero();
            assertThat(num(after, "writeback.bytes")).isZero();
            assertThat(num(after, "memory.bytes") + num(after, "nvme.bytes")).isZero();
            assertThat(l3(other, chunk0, data.length)).as("L3 after the drop, read by a client without L1").isEqualTo(data);
        }
        try (StrataFileSystem other = c.client("no-l1-after")) {
            assertThat(other.config().l1()).isEmpty();
            try (var h = other.openRead("/wb/log.bin")) {
                byte[] back = new byte[data.length];
                assertThat(h.read(0, back, 0, back.length)).isEqualTo(data.length);
                assertThat(back).isEqualTo(data);
            }
        }
    }

    /** What L3 holds of [0, len) of a chunk (bypassing every cache). */
    static byte[] l3(StrataFileSystem fs, ChunkAddress chunk, int len) {
        ByteBuf b = Futures.join(fs.l3().readAsync(chunk, 0, len, IoOptions.DEFAULT), Duration.ofSeconds(30));
        try {
            return ByteBufUtil.getBytes(b);
        } finally {
            b.release();
        }
    }

    @Test
    void pinAndTtlComeFromTheFilesPolicy() throws IOException {
        Path pinned = Files.createDirectories(mnt.resolve("pinned"));
        Path old = pinned.resolve("before-pin.bin");
        Files.write(old, random(100_000, 5)); // created before the directory was pinned
        c.fs.setPolicy("/pinned", "pin=on");
        Path short_ = Files.createDirectories(mnt.resolve("short"));
        c.fs.setPolicy("/short", "ttl=1s");
        byte[] data = random(2 << 20, 3);
        Path p = pinned.resolve("p.bin");
        Path s = short_.resolve("s.bin");
        write("/pinned/p.bin", data);
        write("/short/s.bin", data);
        String sum = Sh.sha256(local(data));
        assertThat(directRead(p)).isEqualTo(sum);
        assertThat(directRead(s)).isEqualTo(sum);
        assertThat(stats(p)).containsEntry("policy.pin", "on").containsEntry("policy.ttl", "none");
        assertThat(stats(s)).containsEntry("policy.pin", "off").containsEntry("policy.ttl", "1s");

        Eventually.await("the pinned file's blocks pinned on NVMe", Duration.ofSeconds(10), () -> {
            try {
                Map<String, String> m = stats(p);
                return num(m, "pinned.bytes") == data.length && num(m, "nvme.bytes") == data.length;
            } catch (IOException e) {
                throw new AssertionError(e);
            }
        });
        assertThat(num(stats(mnt), "pinned.bytes")).isGreaterThanOrEqualTo(data.length);
        // a file's policy is fixed at its creation: the older file is not pinned by the new policy
        Files.readAllBytes(old);
        assertThat(stats(old)).containsEntry("policy.pin", "off");
        assertThat(num(stats(old), "pinned.bytes")).isZero();
        // ttl=1s: idle blocks leave memory and NVMe (the sweep runs every 200 ms here)
        Eventually.await("the ttl=1s file's blocks expired", Duration.ofSeconds(15), () -> {
            try {
                Map<String, String> m = stats(s);
                return num(m, "memory.bytes") == 0 && num(m, "nvme.bytes") == 0;
            } catch (IOException e) {
                throw new AssertionError(e);
            }
        });
        Map<String, String> still = stats(p);
        assertThat(num(still, "pinned.bytes")).as("the pinned file, no TTL, stays").isEqualTo(data.length);
        assertThat(directRead(s)).isEqualTo(sum);
    }

    @Test
    void aMountWithoutL1SaysSoAndRefusesToDrop() throws IOException {
        Path m2 = Files.createDirectories(dir.resolve("mnt-no-l1"));
        try (StrataFileSystem plain = c.client("plain"); FuseMount mount = FuseMount.mount(plain, FuseUnderTest.at(m2), c.meters())) {
            Files.writeString(m2.resolve("x.txt"), "x");
            assertThat(stats(m2)).containsExactlyEntriesOf(Map.of("l1", "off"));
            assertThat(stats(m2.resolve("x.txt"))).containsExactlyEntriesOf(Map.of("l1", "off"));
            assertThatThrownBy(() -> drop(m2.resolve("x.txt"))).isInstanceOf(IOException.class).hasMessageContaining("not supported");
        }
    }

    @Test
    void virtualAttributesAreReadByNameButNeverListedSoCpAndRsyncCopyOnlyStoredOnes() throws IOException {
        Path src = Files.createDirectories(mnt.resolve("src"));
        c.fs.setPolicy("/src", "pin=on");
        Path f = src.resolve("a.bin");
        Files.write(f, random(70_000, 4));
        UserDefinedFileAttributeView fx = Files.getFileAttributeView(f, UserDefinedFileAttributeView.class);
        fx.write("color", StandardCharsets.UTF_8.encode("blue"));
        Files.getFileAttributeView(src, UserDefinedFileAttributeView.class).write("tag", StandardCharsets.UTF_8.encode("raw"));

        assertThat(fx.list()).containsExactly("color");
        assertThat(Files.getFileAttributeView(src, UserDefinedFileAttributeView.class).list()).containsExactly("tag");
        assertThat(Files.getFileAttributeView(mnt, UserDefinedFileAttributeView.class).list()).noneMatch(n -> n.startsWith("strata."));
        assertThat(stats(f)).containsEntry("scope", "file"); // read by name
        ByteBuffer viaJava = ByteBuffer.allocate(fx.size("strata.cache"));
        fx.read("strata.cache", viaJava);
        assertThat(new String(viaJava.array(), 0, viaJava.position(), StandardCharsets.UTF_8)).contains("scope=file\n");
        assertThat(fx.size("strata.policy")).isPositive();
        // write-only and read-only
        assertThatThrownBy(() -> fx.size("strata.cache.drop")).isInstanceOf(IOException.class);
        assertThatThrownBy(() -> fx.write("strata.cache", StandardCharsets.UTF_8.encode("x"))).isInstanceOf(IOException.class);

        // cp -a within the mount: the stored attributes travel, the policy does not become overrides
        Sh.Result cp = Sh.run(mnt, "cp", "-a", src.toString(), mnt.resolve("copy").toString());
        assertThat(cp.out()).isEmpty();
        assertThat(cp.code()).isZero();
        assertThat(c.fs.policy("/copy").overrides()).isEmpty();
        assertThat(Files.getFileAttributeView(mnt.resolve("copy/a.bin"), UserDefinedFileAttributeView.class).list()).containsExactly("color");
        assertThat(Files.getFileAttributeView(mnt.resolve("copy"), UserDefinedFileAttributeView.class).list()).containsExactly("tag");
        assertThat(Files.readAllBytes(mnt.resolve("copy/a.bin"))).isEqualTo(Files.readAllBytes(f));

        // out to a local disk and back in: nothing strata.* lands on the local files
        Path out = dir.resolve("out");
        Sh.run(dir, "cp", "-a", src.toString(), out.toString()).ok();
        assertThat(Files.getFileAttributeView(out.resolve("a.bin"), UserDefinedFileAttributeView.class).list())
                .noneMatch(n -> n.startsWith("strata."));
        Sh.Result back = Sh.run(dir, "cp", "-a", out.toString(), mnt.resolve("back").toString());
        assertThat(back.out()).isEmpty();
        assertThat(back.code()).isZero();

        if (Sh.run(dir, "bash", "-c", "command -v rsync").code() == 0) {
            Sh.Result rs = Sh.run(mnt, "rsync", "-aX", src + "/", mnt.resolve("synced").toString() + "/");
            assertThat(rs.out()).isEmpty();
            assertThat(rs.code()).isZero();
            assertThat(c.fs.policy("/synced").overrides()).isEmpty();
            assertThat(Files.getFileAttributeView(mnt.resolve("synced/a.bin"), UserDefinedFileAttributeView.class).list())
                    .containsExactly("color");
        } else {
            System.err.println("[strata] rsync is not installed: rsync -X not exercised (cp -a was)");
        }
    }
}
