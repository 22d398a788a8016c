package io.strata.namespace;

import io.strata.protocol.meta.Caller;
import io.strata.protocol.meta.InodeAttrs;
import io.strata.protocol.meta.OpenFlags;
import io.strata.protocol.meta.OpenResult;
import io.strata.protocol.meta.RequestId;
import static org.assertj.core.api.Assertions.assertThat;

import io.strata.core.InodeId;
import io.strata.core.Status;
import io.strata.core.StrataException;
import io.strata.core.fault.Fault;
import io.strata.core.fault.FaultInjector;
import io.strata.namespace.kv.FaultyKvStore;
import io.strata.namespace.kv.KvStore;
import io.strata.namespace.kv.LmdbKvStore;
import io.strata.testing.Seeded;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;

/**
 * Read-write operations are safe to retry: a commit that happened but was reported as "maybe
 * committed" is not applied twice, and concurrent operations under injected conflicts leave a
 * consistent tree.
 */
class IdempotencyTest extends MetaFixture {
    private final FaultInjector faults = new FaultInjector(7);

    @Override
    KvStore openKv() {
        return new FaultyKvStore(LmdbKvStore.open(tmp.resolve("kv"), LmdbKvStore.Options.DEFAULTS.withSync(false), ctx.meters()), faults);
    }

    private void maybeCommittedAfterEveryCommit(int times) {
        faults.arm(FaultyKvStore.AFTER_COMMIT, new Fault.Fail(new StrataException(Status.TXN_MAYBE_COMMITTED, "injected"))).times(times);
    }

    @Test
    void operationsWhoseCommitLandedButLookedUnknownApplyOnce() {
        InodeAttrs d = mkdir(ROOT, "d");
        maybeCommittedAfterEveryCommit(100);
        InodeAttrs f = create(d.id(), "f"); // exclusive: a second application would say ALREADY_EXISTS
        InodeAttrs sub = mkdir(d.id(), "sub");
        join(meta.linkAsync(Caller.ROOT, f.id(), d.id(), "f2", req()));
        assertThat(stat(f.id()).nlink()).isEqualTo(2); // not 3
        join(meta.renameAsync(Caller.ROOT, d.id(), "f2", sub.id(), "g", false, req())); // twice would be NOT_FOUND
        join(meta.unlinkAsync(Caller.ROOT, d.id(), "f", req()));
        assertThat(stat(f.id()).nlink()).isEqualTo(1);
        OpenResult o = join(meta.openAsync(Caller.ROOT, f.id(), OpenFlags.WRITE, 1, req()));
        InodeAttrs closed = join(meta.closeAsync(Caller.ROOT, f.id(), o.sessionId(), 100, true, req()));
        assertThat(closed.dataVersion()).isEqualTo(f.dataVersion() + 1); // bumped once
        join(meta.unlinkAsync(Caller.ROOT, sub.id(), "g", req()));
        join(meta.rmdirAsync(Caller.ROOT, d.id(), "sub", req()));
        faults.disarmAll();
        assertThat(join(meta.gcQueueLengthAsync())).isEqualTo(1);
        Fsck.check(kv);
    }

    @Test
    void aClientRetryWithTheSameRequestIdGetsTheFirstResult() {
        RequestId id = req();
        InodeAttrs first = join(meta.createAsync(Caller.ROOT, ROOT, "once", 0644, true, id));
        InodeAttrs again = join(meta.createAsync(Caller.ROOT, ROOT, "once", 0644, true, id));
        assertThat(again.id()).isEqualTo(first.id());
        RequestId rm = req();
        join(meta.unlinkAsync(Caller.ROOT, ROOT, "once", rm));
        join(meta.unlinkAsync(Caller.ROOT, ROOT, "once", rm)); // not NOT_FOUND
        assertFailsClean(Status.NOT_FOUND, () -> join(meta.unlinkAsync(Caller.ROOT, ROOT, "once", req())));
    }

    @Test
    void recordsExpireAfterTheirTtlByKeyRange() {
        long now = System.currentTimeMillis();
        RequestId old = RequestId.create(now - java.time.Duration.ofHours(2).toMillis(), new Random(1));
        RequestId fresh = RequestId.create(now, new Random(2));
        join(meta.mkdirAsync(Caller.ROOT, ROOT, "old", 0755, old));
        join(meta.mkdirAsync(Caller.ROOT, ROOT, "fresh", 0755, fresh));
        assertThat(old.epochMillis()).isEqualTo(now - java.time.Duration.ofHours(2).toMillis());
        assertThat(kv.<byte[]>run(tx -> tx.get(KeySpace.idempotency(old)))).isNotNull();
        join(meta.collectGarbageAsync());
        assertThat(kv.<byte[]>run(tx -> tx.get(KeySpace.idempotency(old)))).as("a record past the 30 min TTL").isNull();
        assertThat(kv.<byte[]>run(tx -> tx.get(KeySpace.idempotency(fresh)))).isNotNull();
    }

    @Seeded
    @Test
    void concurrentOperationsUnderInjectedFaultsKeepTheTreeConsistent(long seed) throws Exception {
        faults.arm(FaultyKvStore.BEFORE_COMMIT, new Fault.Fail(new StrataException(Status.TXN_CONFLICT, "injected"))).probability(0.05);
        faults.arm(FaultyKvStore.AFTER_COMMIT, new Fault.Fail(new StrataException(Status.TXN_MAYBE_COMMITTED, "injected"))).probability(0.05);
        List<InodeId> dirs = new ArrayList<>(List.of(ROOT));
        for (int i = 0; i < 4; i++) {
            dirs.add(mkdir(ROOT, "d" + i).id());
        }
        int threads = 6;
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        try {
            List<Future<Integer>> fs = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                Random r = new Random(seed + t);
                fs.add(pool.submit(() -> {
                    int ok = 0;
                    for (int i = 0; i < 120; i++) {
                        InodeId a = dirs.get(r.nextInt(dirs.size()));
                        InodeId b = dirs.get(r.nextInt(dirs.size()));
                        String n1 = "n" + r.nextInt(8);
                        String n2 = "n" + r.nextInt(8);
                        CompletableFuture<?> f = switch (r.nextInt(7)) {
                            case 0, 1 -> meta.createAsync(Caller.ROOT, a, n1, 0644, true, req());
                            case 2 -> meta.mkdirAsync(Caller.ROOT, a, n1, 0755, req());
                            case 3 -> meta.unlinkAsync(Caller.ROOT, a, n1, req());
                            case 4 -> meta.rmdirAsync(Caller.ROOT, a, n1, req());
                            case 5 -> meta.renameAsync(Caller.ROOT, a, n1, b, n2, false, req());
                            default -> meta.lookupAsync(Caller.ROOT, a, n1)
                                    .thenCompose(x -> x.isFile() ? meta.linkAsync(Caller.ROOT, x.id(), b, n2, req())
                                            : CompletableFuture.completedFuture(null));
                        };
                        try {
                            join(f);
                            ok++;
                        } catch (StrataException e) {
                            assertThat(e.status().retryable()).as("a retryable error escaped: %s", e).isFalse();
                        }
                    }
                    return ok;
                }));
            }
            int ok = 0;
            for (Future<Integer> f : fs) {
                ok += f.get();
            }
            assertThat(ok).isGreaterThan(threads * 10);
        } finally {
            pool.shutdownNow();
        }
        faults.disarmAll();
        Fsck.check(kv);
    }

    @Test
    void twoInstancesOnOneStoreNeverHandOutTheSameInode() throws Exception {
        try (MetaStore other = new MetaStore(ctx, kv, StaticChainTables.uniform(4), ChunkReclaimer.NONE,
                MetaStore.Options.DEFAULTS.withGc(java.time.Duration.ZERO, java.time.Duration.ZERO))) {
            List<CompletableFuture<InodeAttrs>> fs = new ArrayList<>();
            for (int i = 0; i < 300; i++) {
                MetaStore m = i % 2 == 0 ? meta : other;
                fs.add(m.createAsync(Caller.ROOT, ROOT, "f" + i, 0644, true, req()));
            }
            Set<InodeId> ids = new HashSet<>();
            for (CompletableFuture<InodeAttrs> f : fs) {
                assertThat(ids.add(join(f).id())).isTrue();
            }
            assertThat(ids).hasSize(300);
        }
        Fsck.check(kv);
    }
}
