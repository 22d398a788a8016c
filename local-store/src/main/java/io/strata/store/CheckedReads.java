package io.strata.store;

import io.netty.buffer.ByteBuf;
import java.io.EOFException;
import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.function.IntFunction;
import java.util.function.IntUnaryOperator;

/**
 * Reads that never return damaged bytes as data: the file's length is checked against what the
 * index recorded, then the CRC32C of every block read. A file that is missing, of the wrong
 * length, or whose bytes fail a check is reported as a {@link DamagedFile} (with what kind of
 * damage, for the caller's counters); the buffer read is released, never returned.
 */
public final class CheckedReads {
    private CheckedReads() {
    }

    /** What is wrong with a file; {@link #label} is the name tiers count it under. */
    public enum Damage {
        MISSING("missing"), SHORT("short"), CRC("crc");

        private final String label;

        Damage(String label) {
            this.label = label;
        }

        public String label() {
            return label;
        }
    }

    /** The file is not what the index says it is. */
    public static final class DamagedFile extends IOException {
        private static final long serialVersionUID = 1L;
        private final Damage damage;
        private final int block;

        public DamagedFile(Path file, Damage damage, int block, String detail) {
            super(file + ": " + damage.label() + (block >= 0 ? " (block " + block + ")" : "") + (detail.isEmpty() ? "" : ": " + detail));
            this.damage = damage;
            this.block = block;
        }

        public Damage damage() {
            return damage;
        }

        /** The block that failed its CRC32C; -1 for other damage. */
        public int block() {
            return block;
        }
    }

    /**
     * Reads {@code n} bytes at {@code start} (a block boundary) of {@code file}, which must be
     * exactly {@code length} bytes long, into a buffer from {@code alloc} (asked for exactly
     * {@code n} bytes), checking each block read against {@code expected} (block number to its
     * CRC32C, blocks of {@code crcs.blockSize()}). Returns the buffer (owned by the caller).
     *
     * @throws DamagedFile the file is missing, not {@code length} bytes long, or a block fails its check
     * @throws IOException any other I/O error
     */
    public static ByteBuf read(Path file, long length, long start, int n, BlockCrcs crcs, IntUnaryOperator expected,
                               IntFunction<ByteBuf> alloc) throws IOException {
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ)) {
            long size = ch.size();
            if (size != length) {
                throw new DamagedFile(file, Damage.SHORT, -1, size + " bytes, " + length + " expected");
            }
            ByteBuf buf = alloc.apply(n);
            try {
                int bad;
                try {
                    bad = read(ch, buf, start, n, crcs, expected);
                } catch (EOFException e) {
                    throw new DamagedFile(file, Damage.SHORT, -1, e.getMessage());
                }
                if (bad >= 0) {
                    throw new DamagedFile(file, Damage.CRC, bad, "CRC32C mismatch");
                }
                return buf;
            } catch (IOException | RuntimeException e) {
                buf.release();
                throw e;
            }
        } catch (NoSuchFileException e) {
            throw new DamagedFile(file, Damage.MISSING, -1, "");
        }
    }

    /**
     * Reads exactly {@code n} bytes at {@code start} of an open file into {@code into} and, when
     * {@code crcs} is not null, checks them block by block against {@code expected}
     * ({@code start} then on a block boundary). Returns the first block that fails its check, or
     * -1; {@link EOFException} when the file ends first. {@code into} keeps what was read either
     * way: the caller decides what to do with it and releases it.
     */
    public static int read(FileChannel ch, ByteBuf into, long start, int n, BlockCrcs crcs, IntUnaryOperator expected)
            throws IOException {
        int at = into.writerIndex();
        ChannelIo.readFully(ch, into, start, n);
        return crcs == null ? -1 : crcs.firstMismatch(into, at, start, n, expected);
    }
}
