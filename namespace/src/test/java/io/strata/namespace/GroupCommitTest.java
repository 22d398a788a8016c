package io.strata.namespace;

import static org.assertj.core.api.Assertions.assertThat;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.DistributionSummary;
import io.strata.core.InodeId;
import io.strata.namespace.kv.KvStore;
import io.strata.namespace.kv.LmdbKvStore;
import io.strata.protocol.meta.Caller;
import io.strata.protocol.meta.DirPage;
import io.strata.protocol.meta.InodeAttrs;
import io.strata.protocol.meta.RequestId;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;

/**
 * Group commit on a real, syncing LMDB store with fewer workers than operations in flight: the
 * workers queue commits and go on, so one LMDB write transaction and one fsync hold more
 * operations than there are workers; every operation is answered only after that sync, keeps
 * the tree consistent, applies once per request id, and real conflicts are retried until they
 * converge.
 */
class GroupCommitTest extends MetaFixture {
    private static final int WORKERS = 2;

    @Override
    KvStore openKv() {
        return LmdbKvStore.open(tmp.resolve("kv"), LmdbKvStore.Options.DEFAULTS.withSync(true), ctx.meters());
    }

    @Override
    MetaStore.Options options() {
        return MetaStore.Options.DEFAULTS.withWorkers(WORKERS).withGc(Duration.ZERO, Duration.ZERO);
    }

    private double largestBatch() {
        DistributionSummary s = ctx.meters().find("strata.kv.commit.batch").summary();
        return s == null ? 0 : s.max();
    }

    private double conflicts() {
        Counter c = ctx.meters().find("strata.kv.retries").tag("reason", "conflict").counter();
        return c == null ? 0 : c.count();
    }

    private List<String> names(InodeId dir) {
        List<String> out = new ArrayList<>();
        String after = null;
        do {
            DirPage p = join(meta.readdirAsync(Caller.ROOT, dir, after, 1000, false));
            p.entries().forEach(e -> out.add(e.name()));
            after = p.next();
        } while (after != null);
        return out;
    }

    /**
     * A stat does not queue behind a storm of changes waiting for the workers: lookups, getattrs
     * and path walks are answered on the asking thread (LMDB reads inline), while most of 2,000
     * creates queued just before them are still unanswered.
     */
    @Test
    void lookupsAreAnsweredWhileChangesWaitForTheWorkers() {
        InodeAttrs d = mkdir(ROOT, "d");
        InodeAttrs known = create(d.id(), "known");
        int n = 2000;
        List<CompletableFuture<InodeAttrs>> fs = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            fs.add(meta.createAsync(Caller.ROOT, d.id(), "f" + i, 0644, true, req()));
        }
        CompletableFuture<InodeAttrs> lookup = meta.lookupAsync(Caller.ROOT, d.id(), "known");
        CompletableFuture<InodeAttrs> getattr = meta.getattrAsync(Caller.ROOT, known.id());
        CompletableFuture<?> walk = meta.resolveAsync(Caller.ROOT, "/d/known");
        long pending = fs.stream().filter(f -> !f.isDone()).count();
        assertThat(lookup).as("the lookup, answered before the call returned").isCompleted();
        assertThat(getattr).isCompleted();
        assertThat(walk).isCompleted();
        assertThat(join(lookup).id()).isEqualTo(known.id());
        assertThat(join(getattr).id()).isEqualTo(known.id());
        assertThat(pending).as("creates still waiting when the reads were answered").isGreaterThan(n / 2);
        fs.forEach(MetaFixture::join);
    }

    @Test
    void moreConcurrentCreatesThanWorkersShareSyncsAndAreAllThere() {
        InodeAttrs d = mkdir(ROOT, "d");
        long inodesBefore = join(meta.statfsAsync(Caller.ROOT)).inodes();
        int n = 200;
        List<CompletableFuture<InodeAttrs>> fs = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            fs.add(meta.createAsync(Caller.ROOT, d.id(), "f" + i, 0644, true, req()));
        }
        Set<InodeId> ids = new HashSet<>();
        for (CompletableFuture<InodeAttrs> f : fs) {
            ids.add(join(f).id());
        }
        assertThat(ids).hasSize(n);
        assertThat(names(d.id())).hasSize(n);
        assertThat(join(meta.statfsAsync(Caller.ROOT)).inodes()).isEqualTo(inodesBefore + n);
        // two workers, yet batches of more than two: workers did not wait for their own fsync
        assertThat(largestBatch()).as("largest commit batch").isGreaterThan(WORKERS);
        Fsck.check(kv);
    }

    @Test
    void concurrentOperationsOnOneDirectoryKeepEveryInvariantAndRetriesGetTheFirstAnswer() {
        InodeAttrs d = mkdir(ROOT, "d");
        InodeAttrs sub = mkdir(d.id(), "sub");
        int n = 64;
        // round 1: create n files, each with its request id; the same ids again while in flight
        List<RequestId> createIds = new ArrayList<>();
        List<CompletableFuture<InodeAttrs>> first = new ArrayList<>();
        List<CompletableFuture<InodeAttrs>> again = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            RequestId id = req();
            createIds.add(id);
            first.add(meta.createAsync(Caller.ROOT, d.id(), "f" + i, 0644, true, id));
        }
        for (int i = 0; i < n; i++) {
            again.add(meta.createAsync(Caller.ROOT, d.id(), "f" + i, 0644, true, createIds.get(i)));
        }
        List<InodeAttrs> files = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            InodeAttrs a = join(first.get(i));
            files.add(a);
            assertThat(join(again.get(i)).id()).as("retry of create f%d", i).isEqualTo(a.id());
        }
        // round 2, all at once on the same directory: hard links, renames into a subdirectory,
        // unlinks and mkdirs (each retried with its id), plus another create per file name
        List<CompletableFuture<?>> ops = new ArrayList<>();
        List<CompletableFuture<InodeAttrs>> links = new ArrayList<>();
        List<RequestId> linkIds = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            InodeId f = files.get(i).id();
            switch (i % 4) {
                case 0 -> {
                    RequestId id = req();
                    linkIds.add(id);
                    links.add(meta.linkAsync(Caller.ROOT, f, d.id(), "l" + i, id));
                    links.add(meta.linkAsync(Caller.ROOT, f, d.id(), "l" + i, id));
                }
                case 1 -> {
                    RequestId id = req();
                    ops.add(meta.renameAsync(Caller.ROOT, d.id(), "f" + i, sub.id(), "r" + i, false, id));
                    ops.add(meta.renameAsync(Caller.ROOT, d.id(), "f" + i, sub.id(), "r" + i, false, id));
                }
                case 2 -> {
                    RequestId id = req();
                    ops.add(meta.unlinkAsync(Caller.ROOT, d.id(), "f" + i, id));
                    ops.add(meta.unlinkAsync(Caller.ROOT, d.id(), "f" + i, id));
                }
                default -> {
                    RequestId id = req();
                    ops.add(meta.mkdirAsync(Caller.ROOT, d.id(), "m" + i, 0755, id));
                    ops.add(meta.mkdirAsync(Caller.ROOT, d.id(), "m" + i, 0755, id));
                }
            }
        }
        ops.forEach(MetaFixture::join);
        for (int k = 0; k < links.size(); k += 2) {
            InodeAttrs a = join(links.get(k));
            assertThat(join(links.get(k + 1)).id()).isEqualTo(a.id());
            assertThat(a.nlink()).as("link answer").isEqualTo(2);
        }
        for (int i = 0; i < n; i++) {
            InodeAttrs now = i % 4 == 2 ? null : stat(files.get(i).id());
            switch (i % 4) {
                case 0 -> assertThat(now.nlink()).isEqualTo(2);
                case 1, 3 -> assertThat(now.nlink()).isEqualTo(1);
                default -> { }
            }
        }
        assertThat(names(sub.id())).hasSize(n / 4);
        // d: sub, n/4 files and their links, n/4 files that stay, n/4 new directories
        assertThat(names(d.id())).hasSize(1 + n / 4 * 2 + n / 4 + n / 4);
        assertThat(stat(d.id()).nlink()).as("links of d: . .. and one per subdirectory").isEqualTo(2 + 1 + n / 4);
        Fsck.check(kv);
    }

    @Test
    void conflictingOperationsUnderConcurrencyRetryAndConverge() {
        InodeAttrs f = create(ROOT, "target");
        InodeAttrs d = mkdir(ROOT, "links");
        double conflictsBefore = conflicts();
        int n = 48;
        // every link reads and rewrites the same inode (its link count): they conflict
        List<CompletableFuture<InodeAttrs>> fs = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            fs.add(meta.linkAsync(Caller.ROOT, f.id(), d.id(), "l" + i, req()));
        }
        Set<Long> answers = new HashSet<>();
        for (CompletableFuture<InodeAttrs> x : fs) {
            answers.add(join(x).nlink());
        }
        assertThat(stat(f.id()).nlink()).isEqualTo(1 + n);
        assertThat(answers).as("each link saw a distinct count").hasSize(n);
        assertThat(conflicts()).as("conflicts retried").isGreaterThan(conflictsBefore);
        Fsck.check(kv);
    }
}
