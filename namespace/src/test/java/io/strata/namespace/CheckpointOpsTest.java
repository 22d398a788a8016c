package io.strata.namespace;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.strata.core.InodeId;
import io.strata.core.Status;
import io.strata.core.StrataException;
import io.strata.protocol.meta.Caller;
import io.strata.protocol.meta.Checkpoint;
import io.strata.protocol.meta.Checkpoint.Generation;
import io.strata.protocol.meta.InodeAttrs;
import io.strata.protocol.meta.OpenFlags;
import io.strata.protocol.meta.OpenResult;
import io.strata.protocol.meta.SetAttr;
import io.strata.protocol.meta.Staging;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Checkpoint generations in the namespace: commit, the manifest, read-only generations, content checksums, retention. */
class CheckpointOpsTest extends MetaFixture {
    private InodeAttrs root(String... policy) {
        InodeAttrs r = mkdir(ROOT, "ckpt");
        join(meta.policySetAsync(Caller.ROOT, r.id(), List.of(policy), req()));
        return r;
    }

    /** A file written by one session from offset 0 and closed with the checksum the client computed. */
    private InodeAttrs file(InodeId dir, String name, long length, long crc) {
        InodeAttrs f = create(dir, name);
        OpenResult w = join(meta.openAsync(Caller.ROOT, f.id(), OpenFlags.WRITE, 1, req()));
        return join(meta.closeAsync(Caller.ROOT, f.id(), w.sessionId(), length, true, crc, length, req()));
    }

    private Generation commit(InodeId gen, Checkpoint.Expected... expected) {
        return join(meta.ckptCommitAsync(Caller.ROOT, gen, Checkpoint.Level.L2, List.of(expected), req()));
    }

    private List<Generation> committed(InodeId root) {
        return join(meta.ckptListAsync(Caller.ROOT, root)).stream().filter(Generation::committed).toList();
    }

    @Test
    void commitPublishesAManifestWithSizesAndChecksumsInCommitOrder() {
        InodeAttrs r = root("profile=checkpoint");
        InodeAttrs g1 = mkdir(r.id(), "step-100");
        file(g1.id(), "__0_0.distcp", 4096, 0x1234);
        InodeAttrs sub = mkdir(g1.id(), "optim");
        file(sub.id(), "__1_0.distcp", 10, 0xBEEF);
        Generation writing = join(meta.ckptStatusAsync(Caller.ROOT, g1.id()));
        assertThat(writing.state()).isEqualTo(Checkpoint.State.WRITING);
        assertThat(committed(r.id())).isEmpty();

        Generation c = commit(g1.id(), new Checkpoint.Expected("__0_0.distcp", 4096), new Checkpoint.Expected("optim/__1_0.distcp", 10));
        assertThat(c.state()).isEqualTo(Checkpoint.State.COMMITTED);
        assertThat(c.seq()).isEqualTo(1);
        assertThat(c.files()).isEqualTo(2);
        assertThat(c.bytes()).isEqualTo(4106);
        assertThat(c.unchecked()).isZero();
        assertThat(c.durability()).as("no file is staged: every byte is in L3 already").isEqualTo(Checkpoint.Durability.L3);
        assertThat(c.startedMillis()).isPositive().isLessThanOrEqualTo(c.committedMillis());
        assertThat(c.l3Millis()).isEqualTo(c.committedMillis());
        Checkpoint.ManifestPage m = join(meta.ckptManifestAsync(Caller.ROOT, g1.id(), "", 100));
        assertThat(m.entries()).extracting(Checkpoint.Entry::path).containsExactly("__0_0.distcp", "optim", "optim/__1_0.distcp");
        assertThat(m.entries().get(0).crc()).isEqualTo(0x1234);
        assertThat(m.entries().get(2).size()).isEqualTo(10);

        // a second commit of the same generation (another rank, or a retry) answers it as it is
        assertThat(commit(g1.id()).seq()).isEqualTo(1);
        InodeAttrs g2 = mkdir(r.id(), "step-200");
        file(g2.id(), "a", 1, 7);
        assertThat(commit(g2.id()).seq()).isEqualTo(2);
        assertThat(committed(r.id())).extracting(Generation::name).containsExactly("step-100", "step-200");
        Fsck.check(kv);
    }

    @Test
    void aCommitIsRefusedWithNothingWrittenWhenAFileIsOpenMissingOrOfAnotherSize() {
        InodeAttrs r = root("profile=checkpoint");
        InodeAttrs g = mkdir(r.id(), "g");
        file(g.id(), "a", 100, 1);
        InodeAttrs b = create(g.id(), "b");
        OpenResult writer = join(meta.openAsync(Caller.ROOT, b.id(), OpenFlags.WRITE, 9, req()));
        assertFailsClean(Status.FILE_BUSY, () -> commit(g.id()));
        join(meta.closeAsync(Caller.ROOT, b.id(), writer.sessionId(), 5, true, req()));
        assertFailsClean(Status.NOT_FOUND, () -> commit(g.id(), new Checkpoint.Expected("c", 1)));
        assertFailsClean(Status.INVALID_ARGUMENT, () -> commit(g.id(), new Checkpoint.Expected("a", 99)));
        assertThatThrownBy(() -> commit(g.id(), new Checkpoint.Expected("a", 99))).hasMessageContaining("a has 100 bytes, expected 99");
        // a directory that is not a generation of a root
        InodeAttrs plain = mkdir(ROOT, "plain");
        assertFailsClean(Status.INVALID_ARGUMENT, () -> commit(plain.id()));
        assertThat(commit(g.id(), new Checkpoint.Expected("a", 100), new Checkpoint.Expected("b", 5)).unchecked())
                .as("b was closed without a checksum").isEqualTo(1);
    }

    @Test
    void aCommittedGenerationIsReadOnlyAndRemovingPartOfItWithdrawsIt() {
        InodeAttrs r = root("profile=checkpoint");
        InodeAttrs g = mkdir(r.id(), "g");
        InodeAttrs a = file(g.id(), "a", 10, 3);
        commit(g.id());
        assertFailsClean(Status.READ_ONLY, () -> join(meta.openAsync(Caller.ROOT, a.id(), OpenFlags.WRITE, 1, req())));
        assertFailsClean(Status.READ_ONLY, () -> join(meta.setattrAsync(Caller.ROOT, a.id(), SetAttr.size(0), req())));
        assertFailsClean(Status.READ_ONLY, () -> create(g.id(), "late"));
        assertFailsClean(Status.READ_ONLY, () -> join(meta.renameAsync(Caller.ROOT, g.id(), "a", g.id(), "b", false, req())));
        assertFailsClean(Status.READ_ONLY, () -> join(meta.renameAsync(Caller.ROOT, r.id(), "g", r.id(), "h", false, req())));
        // reading goes on
        OpenResult reader = join(meta.openAsync(Caller.ROOT, a.id(), OpenFlags.READ, 1, req()));
        join(meta.closeAsync(Caller.ROOT, a.id(), reader.sessionId(), -1, false, req()));

        join(meta.ckptPinAsync(Caller.ROOT, g.id(), true, req()));
        assertFailsClean(Status.NOT_PERMITTED, () -> join(meta.unlinkAsync(Caller.ROOT, g.id(), "a", req())));
        join(meta.ckptPinAsync(Caller.ROOT, g.id(), false, req()));
        join(meta.unlinkAsync(Caller.ROOT, g.id(), "a", req()));
        assertThat(join(meta.ckptStatusAsync(Caller.ROOT, g.id())).state()).isEqualTo(Checkpoint.State.REMOVING);
        assertThat(committed(r.id())).as("a generation missing a file is no longer committed").isEmpty();
        join(meta.keepCheckpointsAsync());
        assertThat(join(meta.ckptListAsync(Caller.ROOT, r.id()))).isEmpty();
        assertThatThrownBy(() -> lookup(r.id(), "g")).satisfies(e -> assertThat(statusOf(e)).isEqualTo(Status.NOT_FOUND));
        Fsck.check(kv);
    }

    @Test
    void aChecksumIsKeptOnlyWhenOneWriterWroteTheWholeFile() {
        InodeAttrs r = root("profile=checkpoint");
        InodeAttrs g = mkdir(r.id(), "g");
        // fsync then close without new writes: the close carries the checksum
        InodeAttrs f = create(g.id(), "synced");
        OpenResult w = join(meta.openAsync(Caller.ROOT, f.id(), OpenFlags.WRITE, 1, req()));
        join(meta.fsyncAsync(Caller.ROOT, f.id(), w.sessionId(), 64, req()));
        join(meta.closeAsync(Caller.ROOT, f.id(), w.sessionId(), 0, false, 0xAB, 64, req()));
        // two writers overlapping: neither's checksum can be trusted
        InodeAttrs two = create(g.id(), "two");
        OpenResult w1 = join(meta.openAsync(Caller.ROOT, two.id(), OpenFlags.WRITE, 1, req()));
        OpenResult w2 = join(meta.openAsync(Caller.ROOT, two.id(), OpenFlags.WRITE, 2, req()));
        join(meta.closeAsync(Caller.ROOT, two.id(), w2.sessionId(), 8, true, Checkpoint.NO_CRC, 0, req()));
        join(meta.closeAsync(Caller.ROOT, two.id(), w1.sessionId(), 8, true, 0x99, 8, req()));
        // a checksum of fewer bytes than the file has is not the file's
        InodeAttrs shortCrc = create(g.id(), "short");
        OpenResult w3 = join(meta.openAsync(Caller.ROOT, shortCrc.id(), OpenFlags.WRITE, 1, req()));
        join(meta.closeAsync(Caller.ROOT, shortCrc.id(), w3.sessionId(), 100, true, 0x55, 50, req()));
        commit(g.id());
        List<Checkpoint.Entry> m = join(meta.ckptManifestAsync(Caller.ROOT, g.id(), "", 100)).entries();
        assertThat(m).extracting(Checkpoint.Entry::path).containsExactly("short", "synced", "two");
        assertThat(m.get(1).crc()).isEqualTo(0xAB);
        assertThat(m.get(0).hasCrc()).isFalse();
        assertThat(m.get(2).hasCrc()).isFalse();
    }

    private double reached(String level) {
        io.micrometer.core.instrument.Timer t = ctx.meters().find("strata.ckpt.reached").tag("level", level).timer();
        return t == null ? 0 : t.count();
    }

    @Test
    void theTimeToEachLevelIsRecordedOnceAsAGenerationReachesIt() {
        InodeAttrs r = root("profile=checkpoint");
        InodeAttrs g1 = mkdir(r.id(), "in-l3");
        file(g1.id(), "shard", 10, 1);
        commit(g1.id());
        commit(g1.id()); // a second rank's commit: nothing new reached
        assertThat(reached("committed")).isEqualTo(1);
        assertThat(reached("l2")).as("nothing staged: in L3, so in L2 too, at the commit").isEqualTo(1);
        assertThat(reached("l3")).isEqualTo(1);

        // a staged file: durable in L2 at the commit, in L3 once its drain reports, seen by the keeper's pass
        InodeAttrs g2 = mkdir(r.id(), "staged");
        InodeAttrs f = file(g2.id(), "shard", 10, 2);
        join(meta.stageOpenAsync(Caller.ROOT, f.id(), 1, 2, StagingRecordTest.AB, req()));
        join(meta.stagePublishAsync(Caller.ROOT, f.id(), 1, new Staging.Delta(Map.of(), List.of(new Staging.Range(0, 0))), req()));
        Generation c = commit(g2.id());
        assertThat(c.durability()).isEqualTo(Checkpoint.Durability.L2);
        assertThat(reached("committed")).isEqualTo(2);
        assertThat(reached("l2")).isEqualTo(2);
        assertThat(reached("l3")).isEqualTo(1);
        join(meta.keepCheckpointsAsync());
        assertThat(reached("l3")).as("not drained yet").isEqualTo(1);
        join(meta.drainReportAsync(Caller.ROOT, f.id(), 1, 1, true, req()));
        join(meta.keepCheckpointsAsync());
        join(meta.keepCheckpointsAsync());
        assertThat(reached("l3")).as("recorded by the pass that saw it, once").isEqualTo(2);
        assertThat(reached("l2")).isEqualTo(2);
        assertThat(ctx.meters().find("strata.ckpt.reached").tag("level", "l3").timer().max(java.util.concurrent.TimeUnit.MILLISECONDS))
                .as("from the generation's first write").isLessThan(60_000);
    }

    @Test
    void retentionKeepsTheNewestEveryKthPinnedAndOpenGenerations() {
        InodeAttrs r = root("profile=checkpoint", "checkpoint.keep-last=2", "checkpoint.keep-every=3");
        InodeId[] gens = new InodeId[7];
        for (int i = 1; i <= 6; i++) {
            InodeAttrs g = mkdir(r.id(), "g" + i);
            gens[i] = g.id();
            file(g.id(), "shard", 10, i);
            commit(g.id());
        }
        join(meta.ckptPinAsync(Caller.ROOT, gens[1], true, req()));
        InodeAttrs g2shard = lookup(gens[2], "shard");
        OpenResult restoring = join(meta.openAsync(Caller.ROOT, g2shard.id(), OpenFlags.READ, 1, req()));
        assertThat(join(meta.keepCheckpointsAsync())).isEqualTo(1); // g4: not among the last 2, not a 3rd, not pinned, not open
        assertThat(committed(r.id())).extracting(Generation::name).containsExactly("g1", "g2", "g3", "g5", "g6");
        join(meta.closeAsync(Caller.ROOT, g2shard.id(), restoring.sessionId(), -1, false, req()));
        assertThat(join(meta.keepCheckpointsAsync())).isEqualTo(1); // g2, no longer being read
        assertThat(committed(r.id())).extracting(Generation::name).containsExactly("g1", "g3", "g5", "g6");
        assertThatThrownBy(() -> lookup(r.id(), "g4")).satisfies(e -> assertThat(statusOf(e)).isEqualTo(Status.NOT_FOUND));
        Fsck.check(kv);
    }

    @Test
    void aPartialGenerationGoesAfterTheGracePeriodOnlyOnceNoWriterIsLeft() throws Exception {
        InodeAttrs r = root("profile=checkpoint", "checkpoint.grace=1s");
        InodeAttrs done = mkdir(r.id(), "done");
        file(done.id(), "x", 1, 1);
        commit(done.id());
        InodeAttrs partial = mkdir(r.id(), "partial");
        InodeAttrs f = create(partial.id(), "shard");
        OpenResult writer = join(meta.openAsync(Caller.ROOT, f.id(), OpenFlags.WRITE, 1, req()));
        Thread.sleep(1200);
        assertThat(join(meta.keepCheckpointsAsync())).as("a writer is alive").isZero();
        assertThat(lookup(r.id(), "partial").id()).isEqualTo(partial.id());
        join(meta.closeAsync(Caller.ROOT, f.id(), writer.sessionId(), 4, true, req()));
        assertThat(join(meta.keepCheckpointsAsync())).isEqualTo(1);
        assertThatThrownBy(() -> lookup(r.id(), "partial")).satisfies(e -> assertThat(statusOf(e)).isEqualTo(Status.NOT_FOUND));
        assertThat(committed(r.id())).extracting(Generation::name).containsExactly("done");
        Fsck.check(kv);
    }

    @Test
    void theCheckpointProfileStagesAndStripesWideAndBadRetentionValuesAreRefused() {
        InodeAttrs r = root("profile=checkpoint");
        var p = join(meta.policyGetAsync(Caller.ROOT, r.id()));
        assertThat(p.effective()).anySatisfy(f -> {
            assertThat(f.key()).isEqualTo("tiers.l2");
            assertThat(f.value()).isEqualTo("stage");
            assertThat(f.from()).isEqualTo("/ckpt (profile checkpoint)");
        });
        assertThat(p.effective()).anySatisfy(f -> {
            assertThat(f.key()).isEqualTo("durability");
            assertThat(f.value()).isEqualTo("l2");
        });
        InodeAttrs g = mkdir(r.id(), "g");
        assertThat(create(g.id(), "f").layout().stripeWidth()).as("16 wide, at most the 8 chains of the table").isEqualTo(8);
        assertThatThrownBy(() -> join(meta.policySetAsync(Caller.ROOT, r.id(), List.of("checkpoint.keep-last=0"), req())))
                .isInstanceOf(StrataException.class).hasMessageContaining("checkpoint.keep-last");
        assertThatThrownBy(() -> join(meta.policySetAsync(Caller.ROOT, r.id(), List.of("profile=fast"), req())))
                .hasMessageContaining("profile");
    }
}
