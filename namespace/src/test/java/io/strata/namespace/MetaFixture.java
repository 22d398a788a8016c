package io.strata.namespace;

import io.strata.protocol.meta.Caller;
import io.strata.protocol.meta.InodeAttrs;
import io.strata.protocol.meta.RequestId;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.strata.core.InodeId;
import io.strata.core.NodeContext;
import io.strata.core.Status;
import io.strata.core.StrataException;
import io.strata.core.util.Futures;
import io.strata.namespace.kv.Bytes;
import io.strata.namespace.kv.KeyValue;
import io.strata.namespace.kv.KvStore;
import io.strata.namespace.kv.LmdbKvStore;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.assertj.core.api.ThrowableAssert;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.io.TempDir;

/** A MetaStore on a fresh LMDB store per test, with blocking helpers. */
abstract class MetaFixture {
    static final Caller ALICE = Caller.of(1000, 1000);
    static final Caller BOB = Caller.of(1001, 1001);
    static final InodeId ROOT = InodeId.ROOT;

    @TempDir
    Path tmp;
    NodeContext ctx;
    KvStore kv;
    MetaStore meta;

    @BeforeEach
    void start() {
        ctx = NodeContext.seeded("meta-test", 1);
        kv = openKv();
        meta = new MetaStore(ctx, kv, StaticChainTables.uniform(8), reclaimer(), options());
    }

    KvStore openKv() {
        return LmdbKvStore.open(tmp.resolve("kv"), LmdbKvStore.Options.DEFAULTS.withSync(false), ctx.meters());
    }

    ChunkReclaimer reclaimer() {
        return ChunkReclaimer.NONE;
    }

    /** A directory of chunk files to count (a fixture whose {@link #reclaimer} frees real chunks). */
    ChunkDir chunkDir() {
        try {
            return new ChunkDir(tmp.resolve("chunks"));
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    MetaStore.Options options() {
        return MetaStore.Options.DEFAULTS.withGc(Duration.ZERO, Duration.ZERO);
    }

    @AfterEach
    void stop() {
        meta.close();
        kv.close();
        ctx.close();
    }

    static <T> T join(CompletableFuture<T> f) {
        return Futures.join(f, Duration.ofSeconds(60));
    }

    static RequestId req() {
        return RequestId.random(new java.util.Random());
    }

    InodeAttrs mkdir(Caller c, InodeId parent, String name, int mode) {
        return join(meta.mkdirAsync(c, parent, name, mode, req()));
    }

    InodeAttrs mkdir(InodeId parent, String name) {
        return mkdir(Caller.ROOT, parent, name, 0777);
    }

    InodeAttrs create(Caller c, InodeId parent, String name, int mode) {
        return join(meta.createAsync(c, parent, name, mode, true, req()));
    }

    InodeAttrs create(InodeId parent, String name) {
        return create(Caller.ROOT, parent, name, 0644);
    }

    InodeAttrs lookup(InodeId parent, String name) {
        return join(meta.lookupAsync(Caller.ROOT, parent, name));
    }

    InodeAttrs stat(InodeId inode) {
        return join(meta.getattrAsync(Caller.ROOT, inode));
    }

    /**
     * Every key and value in the store, for "nothing was written" checks. The inode allocator's
     * counter is left out: reserving a batch of ids (its own transaction, before the operation's)
     * changes no namespace state, and a failed create may trigger one.
     */
    List<KeyValue> dump() {
        List<KeyValue> all = kv.run(tx -> tx.getRange(new byte[] {0}, new byte[] {(byte) 0xFF}, 0));
        return all.stream().filter(e -> !java.util.Arrays.equals(e.key(), KeySpace.NEXT_INODE)).toList();
    }

    /** Asserts {@code call} fails with {@code status} and changes nothing in the store. */
    void assertFailsClean(Status status, ThrowableAssert.ThrowingCallable call) {
        List<KeyValue> before = dump();
        assertThatThrownBy(call).isInstanceOf(StrataException.class)
                .satisfies(e -> assertThat(((StrataException) e).status()).as(e.getMessage()).isEqualTo(status));
        assertThat(dump()).as("the store after a failed operation").isEqualTo(before);
    }

    static Status statusOf(Throwable t) {
        return StrataException.wrap(t).status();
    }

    static long counter(KvStore kv, byte[] key) {
        return kv.<Long>run(tx -> Bytes.readLe64(tx.get(key)));
    }
}
