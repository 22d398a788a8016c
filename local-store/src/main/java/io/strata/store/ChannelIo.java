package io.strata.store;

import io.netty.buffer.ByteBuf;
import java.io.EOFException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/** Positional whole reads and writes between buffers and file channels, and directory fsync. */
public final class ChannelIo {
    private ChannelIo() {
    }

    /** Writes {@code length} bytes of {@code data} from {@code index} (borrowed, indexes untouched) at {@code pos}. */
    public static void writeFully(FileChannel ch, ByteBuf data, int index, int length, long pos) throws IOException {
        if (length == 0) {
            return;
        }
        long p = pos;
        for (ByteBuffer b : data.nioBuffers(index, length)) {
            while (b.hasRemaining()) {
                p += ch.write(b, p);
            }
        }
    }

    /**
     * Reads exactly {@code length} bytes at {@code pos} into {@code into} (appended at its writer
     * index). Throws {@link EOFException} when the file ends first; what was read stays in
     * {@code into}.
     */
    public static void readFully(FileChannel ch, ByteBuf into, long pos, int length) throws IOException {
        int done = 0;
        while (done < length) {
            int n = into.writeBytes(ch, pos + done, length - done);
            if (n < 0) {
                throw new EOFException("data file ends at " + (pos + done));
            }
            done += n;
        }
    }

    /**
     * Makes the directory's entries durable (fsync of the directory): after a create, a rename or
     * an unlink in {@code dir}, the change survives a power loss only once this returns.
     */
    public static void syncDirectory(Path dir) throws IOException {
        try (FileChannel d = FileChannel.open(dir, StandardOpenOption.READ)) {
            d.force(true);
        }
    }
}
