package io.strata.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.strata.fuse.FuseMount;
import io.strata.testing.Slow;
import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Random;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Corrupt chunk files never reach a reader and get repaired: on a {@code strata up} cluster with
 * its FUSE mount, files are written through the mount, then one bit is flipped in every chunk
 * data file of one storage node. Every file still reads back right through the mount (a replica
 * that meets a bad copy answers CHUNK_CORRUPT and the client reads another one), and
 * {@code strata admin scrub --start --wait} finds and repairs every damaged copy.
 */
@Slow
class ScrubIT {
    @Test
    void flippedBitsOnOneReplicaNeverReachAReaderAndAreRepaired(@TempDir Path data) throws Exception {
        Optional<String> noFuse = FuseMount.unavailable();
        assumeTrue(noFuse.isEmpty(), () -> "FUSE is not available: " + noFuse.orElse(""));
        CliTest.Run up = CliTest.strata("up", "--data", data.toString());
        assertThat(up.code()).as(up.err()).isZero();
        String d = "--data=" + data;
        try {
            Path mnt = data.resolve("mnt");
            Files.createDirectories(mnt.resolve("ds"));
            List<byte[]> contents = new ArrayList<>();
            for (int i = 0; i < 8; i++) {
                byte[] b = new byte[(3 << 20) + i * 12_345];
                new Random(i).nextBytes(b);
                Files.write(mnt.resolve("ds/f" + i), b);
                contents.add(b);
            }
            // flip a bit in every chunk version file of storage node 1 (its pool's empty files are left alone)
            int flipped = 0;
            try (Stream<Path> files = Files.walk(data.resolve("storage-1"))) {
                for (Path f : files.filter(p -> p.getParent().getFileName().toString().equals("chunks") && Files.isRegularFile(p))
                        .toList()) {
                    long size = Files.size(f);
                    if (size == 0) {
                        continue;
                    }
                    try (RandomAccessFile raf = new RandomAccessFile(f.toFile(), "rw")) {
                        long at = new Random(flipped).nextLong(size);
                        raf.seek(at);
                        int b = raf.read();
                        raf.seek(at);
                        raf.write(b ^ 0x04);
                    }
                    flipped++;
                }
            }
            assertThat(flipped).as("chunk files on storage node 1").isGreaterThan(4);
            CliTest.Run drop = CliTest.strata("cache", "drop", mnt.toString());
            assertThat(drop.code()).as(drop.err()).isZero();
            for (int round = 0; round < 3; round++) {
                for (int i = 0; i < contents.size(); i++) {
                    assertThat(Files.readAllBytes(mnt.resolve("ds/f" + i))).as("round %d, file %d", round, i).isEqualTo(contents.get(i));
                }
                assertThat(CliTest.strata("cache", "drop", mnt.toString()).code()).isZero();
            }

            CliTest.Run scrub = CliTest.strata("admin", "scrub", "--start", "--wait", "--timeout", "60s", d);
            assertThat(scrub.code()).as(scrub.err()).isZero();
            long repaired = 0;
            long corrupt = 0;
            // node | address | target | state | progress | checked | passes | corrupt | repaired | unrepaired | ended
            Matcher m = Pattern.compile("(?m)^\\s*1\\s*\\|[^|]*\\|\\s*\\d+\\s*\\|\\s*idle\\s*\\|[^|]*\\|[^|]*\\|\\s*\\d+\\s*\\|\\s*(\\d+)\\s*\\|"
                    + "\\s*(\\d+)\\s*\\|\\s*0\\s*\\|").matcher(scrub.out());
            while (m.find()) {
                corrupt += Long.parseLong(m.group(1));
                repaired += Long.parseLong(m.group(2));
            }
            assertThat(corrupt).as(scrub.out()).isEqualTo(flipped);
            assertThat(repaired).as(scrub.out()).isEqualTo(flipped);
            assertThat(scrub.out()).doesNotContain("could not be repaired");

            // a second pass finds every copy healthy
            CliTest.Run again = CliTest.strata("admin", "scrub", "--start", "--wait", d);
            assertThat(again.code()).as(again.err()).isZero();
            Matcher m2 = Pattern.compile("(?m)^\\s*1\\s*\\|[^|]*\\|\\s*\\d+\\s*\\|\\s*idle\\s*\\|[^|]*\\|[^|]*\\|\\s*(\\d+)\\s*\\|\\s*(\\d+)\\s*\\|")
                    .matcher(again.out());
            long corruptAfter = 0;
            while (m2.find()) {
                assertThat(Long.parseLong(m2.group(1))).as("passes").isEqualTo(2);
                corruptAfter += Long.parseLong(m2.group(2));
            }
            assertThat(corruptAfter).as(again.out()).isEqualTo(flipped);
            for (int i = 0; i < contents.size(); i++) {
                assertThat(Files.readAllBytes(mnt.resolve("ds/f" + i))).isEqualTo(contents.get(i));
            }
        } finally {
            assertThat(CliTest.strata("down", "--data", data.toString()).code()).isZero();
        }
    }
}
