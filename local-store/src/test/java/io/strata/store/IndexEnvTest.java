package io.strata.store;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.lmdbjava.Dbi;
import org.lmdbjava.Txn;

/** The LMDB index environment on real LMDB: named databases, flushes, layout records, wiping a cache's unreadable index. */
class IndexEnvTest {
    static final long MAP = 16L << 20;

    @TempDir
    Path dir;

    static ByteBuffer bytes(String s) {
        byte[] b = s.getBytes(StandardCharsets.UTF_8);
        return ByteBuffer.allocateDirect(b.length).put(b).flip();
    }

    static void put(IndexEnv env, Dbi<ByteBuffer> db, String k, String v) {
        try (Txn<ByteBuffer> txn = env.txnWrite()) {
            db.put(txn, bytes(k), bytes(v));
            txn.commit();
        }
    }

    static String get(IndexEnv env, Dbi<ByteBuffer> db, String k) {
        try (Txn<ByteBuffer> txn = env.txnRead()) {
            ByteBuffer v = db.get(txn, bytes(k));
            return v == null ? null : StandardCharsets.UTF_8.decode(v).toString();
        }
    }

    @ParameterizedTest
    @EnumSource(IndexEnv.Sync.class)
    void namedDatabasesKeepTheirEntriesAcrossReopens(IndexEnv.Sync sync) throws IOException {
        Path d = dir.resolve("index");
        try (IndexEnv env = IndexEnv.open(d, MAP, sync, 2, 16)) {
            Dbi<ByteBuffer> a = env.db("a");
            Dbi<ByteBuffer> b = env.db("b");
            put(env, a, "k", "in a");
            put(env, b, "k", "in b");
            env.flush();
            assertThat(env.wiped()).isFalse();
        }
        try (IndexEnv env = IndexEnv.open(d, MAP, sync, 2, 16)) {
            Dbi<ByteBuffer> a = env.db("a");
            assertThat(get(env, a, "k")).isEqualTo("in a");
            assertThat(get(env, env.db("b"), "k")).isEqualTo("in b");
            env.clear(a);
            assertThat(get(env, a, "k")).isNull();
            assertThat(get(env, env.db("b"), "k")).isEqualTo("in b");
        }
    }

    @Test
    void aLayoutRecordMatchesOnlyWhatWasWritten() throws IOException {
        try (IndexEnv env = IndexEnv.open(dir.resolve("index"), MAP, IndexEnv.Sync.NO_SYNC, 2, 16)) {
            LayoutRecord layout = new LayoutRecord(env, env.db("meta"), "layout");
            assertThat(layout.matches(2, 4096)).as("a new index has no record: anything matches").isTrue();
            layout.write(2, 1 << 20);
            assertThat(layout.matches(2, 1 << 20)).isTrue();
            assertThat(layout.matches(2, 4096)).isFalse();
            assertThat(layout.matches(1, 1 << 20)).isFalse();
            assertThat(layout.matches(2)).as("another number of fields").isFalse();
            try (Txn<ByteBuffer> txn = env.txnRead()) {
                ByteBuffer v = env.db("meta").get(txn, bytes("layout"));
                assertThat(v.remaining()).isEqualTo(8);
                assertThat(v.getInt(0)).isEqualTo(2);
                assertThat(v.getInt(4)).isEqualTo(1 << 20);
            }
        }
    }

    @Test
    void aCachesUnreadableIndexIsWipedWithWhatItDescribed() throws IOException {
        Path d = dir.resolve("index");
        Path blocks = dir.resolve("blocks");
        try (IndexEnv env = IndexEnv.open(d, MAP, IndexEnv.Sync.NO_SYNC, 2, 16)) {
            put(env, env.db("blocks"), "k", "v");
            env.flush();
        }
        Files.createDirectories(blocks.resolve("00"));
        Files.writeString(blocks.resolve("00/k.blk"), "block");
        byte[] garbage = new byte[64 * 1024];
        java.util.Arrays.fill(garbage, (byte) 0x5a);
        Files.write(d.resolve("data.mdb"), garbage);
        // the durable truth of a store is never wiped: opening fails and the files stay
        assertThatThrownBy(() -> IndexEnv.open(d, MAP, IndexEnv.Sync.NO_META_SYNC, 2, 16)).isInstanceOf(RuntimeException.class);
        assertThat(Files.readAllBytes(d.resolve("data.mdb"))).isEqualTo(garbage);
        try (IndexEnv env = IndexEnv.openOrWipe(d, MAP, IndexEnv.Sync.NO_SYNC, 2, 16, blocks)) {
            assertThat(env.wiped()).isTrue();
            assertThat(get(env, env.db("blocks"), "k")).isNull();
            assertThat(blocks).isEmptyDirectory();
            put(env, env.db("blocks"), "k2", "v2");
            env.flush();
        }
        try (IndexEnv env = IndexEnv.openOrWipe(d, MAP, IndexEnv.Sync.NO_SYNC, 2, 16, blocks)) {
            assertThat(env.wiped()).isFalse();
            assertThat(get(env, env.db("blocks"), "k2")).isEqualTo("v2");
        }
    }
}
