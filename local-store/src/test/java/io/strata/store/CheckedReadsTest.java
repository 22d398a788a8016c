package io.strata.store;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.buffer.Unpooled;
import io.strata.testing.Buffers;
import java.io.EOFException;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Arrays;
import java.util.Random;
import java.util.function.IntFunction;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Checked reads catch damage and never return it: a flipped byte fails the CRC32C of its block
 * (a read of other blocks still works), a truncated or extended file fails the length check, a
 * deleted file is missing. Every failed read releases its buffer (the leak check would fail the
 * class otherwise).
 */
class CheckedReadsTest {
    static final int BLOCK = 4096;
    static final IntFunction<ByteBuf> ALLOC = n -> PooledByteBufAllocator.DEFAULT.directBuffer(n, n);

    @TempDir
    Path dir;
    Path file;
    byte[] data = new byte[10 * BLOCK + 300];
    BlockCrcs crcs = new BlockCrcs(BLOCK);
    int[] expected;

    @BeforeEach
    void write() throws IOException {
        new Random(11).nextBytes(data);
        file = dir.resolve("f");
        Files.write(file, data);
        ByteBuf b = Unpooled.wrappedBuffer(data);
        expected = crcs.of(b);
        b.release();
    }

    byte[] read(long start, int n) throws IOException {
        return Buffers.drain(CheckedReads.read(file, data.length, start, n, crcs, i -> expected[i], ALLOC));
    }

    void flip(long at) throws IOException {
        try (RandomAccessFile raf = new RandomAccessFile(file.toFile(), "rw")) {
            raf.seek(at);
            int v = raf.read();
            raf.seek(at);
            raf.write(v ^ 0x10);
        }
    }

    static CheckedReads.Damage damage(Throwable t) {
        return ((CheckedReads.DamagedFile) t).damage();
    }

    @Test
    void intactReadsReturnTheBytes() throws IOException {
        assertThat(read(0, data.length)).isEqualTo(data);
        assertThat(read(3 * BLOCK, 2 * BLOCK)).isEqualTo(Arrays.copyOfRange(data, 3 * BLOCK, 5 * BLOCK));
        assertThat(read(10 * BLOCK, 300)).isEqualTo(Arrays.copyOfRange(data, 10 * BLOCK, data.length));
    }

    @Test
    void aFlippedByteFailsItsBlockOnly() throws IOException {
        flip(6 * BLOCK + 123);
        assertThatThrownBy(() -> read(0, data.length)).isInstanceOfSatisfying(CheckedReads.DamagedFile.class, e -> {
            assertThat(e.damage()).isEqualTo(CheckedReads.Damage.CRC);
            assertThat(e.damage().label()).isEqualTo("crc");
            assertThat(e.block()).isEqualTo(6);
        });
        assertThatThrownBy(() -> read(5 * BLOCK, 2 * BLOCK)).satisfies(e -> assertThat(damage(e)).isEqualTo(CheckedReads.Damage.CRC));
        assertThat(read(0, 6 * BLOCK)).isEqualTo(Arrays.copyOf(data, 6 * BLOCK));
        assertThat(read(7 * BLOCK, 2 * BLOCK)).isEqualTo(Arrays.copyOfRange(data, 7 * BLOCK, 9 * BLOCK));
    }

    @Test
    void aFileOfAnotherLengthOrNoFileIsDamage() throws IOException {
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.WRITE)) {
            ch.truncate(data.length - 1);
        }
        assertThatThrownBy(() -> read(0, BLOCK)).satisfies(e -> assertThat(damage(e)).isEqualTo(CheckedReads.Damage.SHORT));
        Files.write(file, Arrays.copyOf(data, data.length + 1));
        assertThatThrownBy(() -> read(0, BLOCK)).satisfies(e -> assertThat(damage(e)).isEqualTo(CheckedReads.Damage.SHORT));
        Files.delete(file);
        assertThatThrownBy(() -> read(0, BLOCK)).satisfies(e -> assertThat(damage(e)).isEqualTo(CheckedReads.Damage.MISSING));
    }

    @Test
    void aChannelReadReportsTheBadBlockOrTheEndOfTheFile() throws IOException {
        flip(2 * BLOCK);
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ)) {
            ByteBuf b = ALLOC.apply(4 * BLOCK);
            try {
                assertThat(CheckedReads.read(ch, b, BLOCK, 4 * BLOCK, crcs, i -> expected[i])).isEqualTo(2);
                b.clear();
                assertThat(CheckedReads.read(ch, b, BLOCK, 4 * BLOCK, null, null)).as("unchecked").isEqualTo(-1);
                b.clear();
                assertThat(CheckedReads.read(ch, b, 3 * BLOCK, 4 * BLOCK, crcs, i -> expected[i])).isEqualTo(-1);
                b.clear();
                assertThatThrownBy(() -> CheckedReads.read(ch, b, 8 * BLOCK, 3 * BLOCK, crcs, i -> expected[i]))
                        .isInstanceOf(EOFException.class);
            } finally {
                b.release();
            }
        }
    }
}
