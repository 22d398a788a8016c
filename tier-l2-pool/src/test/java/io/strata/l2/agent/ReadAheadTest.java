package io.strata.l2.agent;

import static org.assertj.core.api.Assertions.assertThat;

import io.netty.buffer.Unpooled;
import io.strata.core.DataSize;
import io.strata.l2.agent.CopyStore.Key;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Readahead across copies on a real store: reads of a file's chunks in order hint the copies of
 * the next chunks whose first holder this agent is, each once; scattered reads hint nothing; a
 * read this agent serves for another first holder widens the hints to every present copy.
 */
class ReadAheadTest {
    private static final int CHUNK = 1 << 20;
    private static final int SELF = 11;

    /** Copies of chunks 0..n-1 of {@code inode}: even chunks enter at this agent, odd ones at agent 12. */
    static void copies(CopyStore s, long inode, int n) {
        for (int i = 0; i < n; i++) {
            Key k = new Key(inode, i);
            List<Integer> holders = i % 2 == 0 ? List.of(SELF, 12) : List.of(12, SELF);
            s.exclusive(k, () -> {
                s.replace(k, Unpooled.wrappedBuffer(new byte[4096]));
                s.record(k, new Copy(1, 1, 4096, 1, 1, CHUNK, holders, 0, true, false));
                return null;
            });
        }
    }

    @Test
    void readsInOrderHintTheNextCopiesThisAgentServesOnce(@TempDir Path dir) throws Exception {
        assertThat(ReadAhead.available()).as("libc's posix_fadvise is callable on Linux").isTrue();
        try (CopyStore s = CopyStore.open(dir, SELF, DataSize.ofGiB(1), DataSize.ZERO, System::currentTimeMillis)) {
            copies(s, 5, 64);
            ReadAhead ra = new ReadAhead(s, SELF, Runnable::run);
            int ahead = (int) (ReadAhead.AHEAD_BYTES / CHUNK);

            ra.served(new Key(5, 0), s.get(new Key(5, 0)));
            assertThat(ra.hinted()).as("one read is no run yet").isZero();
            ra.served(new Key(5, 2), s.get(new Key(5, 2)));
            // chunks 3..2+ahead: the even ones enter here
            assertThat(ra.hinted()).isEqualTo(ahead / 2);
            ra.served(new Key(5, 4), s.get(new Key(5, 4)));
            assertThat(ra.hinted()).as("two more chunks ahead, one of them here").isEqualTo(ahead / 2 + 1);
            ra.served(new Key(5, 4), s.get(new Key(5, 4)));
            assertThat(ra.hinted()).as("nothing is hinted twice").isEqualTo(ahead / 2 + 1);

            // another file read at scattered places: no run, no hints
            copies(s, 6, 200);
            long before = ra.hinted();
            for (int i : new int[] {0, 100, 40, 160, 80}) {
                ra.served(new Key(6, i), s.get(new Key(6, i)));
            }
            assertThat(ra.hinted()).isEqualTo(before);

            // readers come here for a chunk another agent is first holder of: every copy is hinted from then on
            ra.served(new Key(6, 81), s.get(new Key(6, 81)));
            assertThat(ra.hinted()).isEqualTo(before + ahead);
        }
    }
}
