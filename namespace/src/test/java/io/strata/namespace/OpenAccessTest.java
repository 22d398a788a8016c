package io.strata.namespace;

import static org.assertj.core.api.Assertions.assertThat;

import io.strata.core.Status;
import io.strata.protocol.meta.Caller;
import io.strata.protocol.meta.InodeAttrs;
import io.strata.protocol.meta.OpenFlags;
import io.strata.protocol.meta.OpenResult;
import io.strata.protocol.meta.RequestId;
import io.strata.protocol.meta.SetAttr;
import org.junit.jupiter.api.Test;

/**
 * Where POSIX checks access when a file is opened rather than at each call: a file created by
 * open(O_CREAT) opens whatever mode it was given, a size change through a session opened for
 * writing needs no write bit, and the set-ID bits go when someone else changes the data.
 */
class OpenAccessTest extends MetaFixture {
    static final int RW = OpenFlags.READ | OpenFlags.WRITE;

    OpenResult createOpen(Caller c, InodeAttrs dir, String name, int mode, boolean exclusive, int flags) {
        return join(meta.createOpenAsync(c, dir.id(), name, mode, exclusive, flags, 7, req()));
    }

    @Test
    void aFileCreatedWithModeZeroOpensForItsCreator() {
        InodeAttrs home = mkdir(Caller.ROOT, ROOT, "home", 0777);
        OpenResult o = createOpen(ALICE, home, "f", 0, false, RW);
        assertThat(o.attrs().mode()).isZero();
        assertThat(o.attrs().uid()).isEqualTo(1000);
        assertThat(o.attrs().isFile()).isTrue();
        // the mode applies to every later open, also the creator's, also with O_CREAT on the existing name
        assertFailsClean(Status.PERMISSION_DENIED, () -> join(meta.openAsync(ALICE, o.attrs().id(), OpenFlags.READ, 7, req())));
        assertFailsClean(Status.PERMISSION_DENIED, () -> createOpen(ALICE, home, "f", 0, false, RW));
        assertFailsClean(Status.ALREADY_EXISTS, () -> createOpen(ALICE, home, "f", 0, true, RW));
        // an existing file the caller may open: found and opened
        create(ALICE, home.id(), "g", 0600);
        OpenResult g = createOpen(ALICE, home, "g", 0, false, OpenFlags.WRITE);
        assertThat(g.attrs().mode()).isEqualTo(0600);
        assertFailsClean(Status.PERMISSION_DENIED, () -> createOpen(BOB, home, "g", 0644, false, OpenFlags.READ));
        // the parent's bits still decide whether a name may be made; an existing name needs only search
        InodeAttrs priv = mkdir(ALICE, home.id(), "alice", 0755);
        assertFailsClean(Status.PERMISSION_DENIED, () -> createOpen(BOB, priv, "x", 0644, false, RW));
        create(ALICE, priv.id(), "shared", 0644);
        assertThat(createOpen(BOB, priv, "shared", 0600, false, OpenFlags.READ).attrs().mode()).isEqualTo(0644);
        assertFailsClean(Status.ALREADY_EXISTS, () -> createOpen(BOB, priv, "shared", 0600, true, OpenFlags.READ));
        InodeAttrs closed = mkdir(ALICE, home.id(), "closed", 0700);
        create(ALICE, closed.id(), "hidden", 0644);
        assertFailsClean(Status.PERMISSION_DENIED, () -> createOpen(BOB, closed, "hidden", 0644, false, OpenFlags.READ));
        mkdir(ALICE, home.id(), "d", 0755);
        assertFailsClean(Status.IS_A_DIRECTORY, () -> createOpen(ALICE, home, "d", 0644, false, OpenFlags.READ));
        assertFailsClean(Status.INVALID_ARGUMENT, () -> createOpen(ALICE, home, "bad", 0644, false, OpenFlags.TRUNCATE));
        assertFailsClean(Status.INVALID_ARGUMENT, () -> createOpen(ALICE, home, "bad", 0644, false, 0));
        Fsck.check(kv);
    }

    @Test
    void anImmutableFileTakesNoNewBytesOnceWrittenWhateverTheClientChecks() {
        InodeAttrs frozen = mkdir(Caller.ROOT, ROOT, "frozen", 0777);
        join(meta.policySetAsync(Caller.ROOT, frozen.id(), java.util.List.of("consistency=immutable"), req()));
        OpenResult first = createOpen(ALICE, frozen, "weights", 0644, true, RW);
        OpenResult second = join(meta.openAsync(ALICE, first.attrs().id(), OpenFlags.WRITE, 7, req()));
        InodeAttrs written = join(meta.closeAsync(ALICE, first.attrs().id(), first.sessionId(), 4096, true, req()));
        assertThat(written.length()).isEqualTo(4096);
        // once its first writer published, no open for writing, no O_TRUNC and no truncate, whoever asks
        assertFailsClean(Status.READ_ONLY, () -> join(meta.openAsync(ALICE, written.id(), OpenFlags.WRITE, 7, req())));
        assertFailsClean(Status.READ_ONLY, () -> join(meta.openAsync(Caller.ROOT, written.id(), RW | OpenFlags.TRUNCATE, 7, req())));
        assertFailsClean(Status.READ_ONLY, () -> createOpen(ALICE, frozen, "weights", 0644, false, OpenFlags.WRITE));
        assertFailsClean(Status.READ_ONLY, () -> join(meta.setattrAsync(ALICE, written.id(), SetAttr.size(0), req())));
        assertFailsClean(Status.READ_ONLY, () -> join(meta.setattrAsync(Caller.ROOT, written.id(), SetAttr.size(0), req())));
        assertThat(join(meta.openAsync(BOB, written.id(), OpenFlags.READ, 7, req())).attrs().length()).as("reads as ever").isEqualTo(4096);
        // a session opened for writing before the first publish keeps its rights, as its writes do
        assertThat(join(meta.setattrAsync(ALICE.through(second.sessionId()), written.id(), SetAttr.size(100), req())).length())
                .isEqualTo(100);
        // a file of another directory is not held
        InodeAttrs home = mkdir(Caller.ROOT, ROOT, "home", 0777);
        OpenResult plain = createOpen(ALICE, home, "f", 0644, true, RW);
        join(meta.closeAsync(ALICE, plain.attrs().id(), plain.sessionId(), 10, true, req()));
        assertThat(join(meta.setattrAsync(ALICE, plain.attrs().id(), SetAttr.size(0), req())).length()).isZero();
        Fsck.check(kv);
    }

    @Test
    void aCreateOpenRetriedWithItsRequestIdOpensOneSession() {
        InodeAttrs home = mkdir(Caller.ROOT, ROOT, "home", 0777);
        RequestId r = req();
        OpenResult first = join(meta.createOpenAsync(ALICE, home.id(), "f", 0, true, RW, 7, r));
        OpenResult again = join(meta.createOpenAsync(ALICE, home.id(), "f", 0, true, RW, 7, r));
        assertThat(again.sessionId()).isEqualTo(first.sessionId());
        assertThat(again.attrs()).isEqualTo(first.attrs());
        join(meta.closeAsync(ALICE, first.attrs().id(), first.sessionId(), 0, false, req()));
        join(meta.unlinkAsync(ALICE, home.id(), "f", req()));
        Fsck.check(kv);
    }

    @Test
    void aSizeChangeThroughASessionOpenedForWritingNeedsNoWriteBit() {
        InodeAttrs home = mkdir(Caller.ROOT, ROOT, "home", 0777);
        OpenResult o = createOpen(ALICE, home, "f", 0, false, RW);
        var id = o.attrs().id();
        // by path (no session): the mode says no
        assertFailsClean(Status.PERMISSION_DENIED, () -> join(meta.setattrAsync(ALICE, id, SetAttr.size(10), req())));
        InodeAttrs cut = join(meta.setattrAsync(ALICE.through(o.sessionId()), id, SetAttr.size(10), req()));
        assertThat(cut.length()).isEqualTo(10);
        // a session opened for reading only, an unknown session, another file's session: no
        join(meta.setattrAsync(Caller.ROOT, id, SetAttr.mode(0444), req()));
        OpenResult ro = join(meta.openAsync(ALICE, id, OpenFlags.READ, 7, req()));
        assertFailsClean(Status.PERMISSION_DENIED, () -> join(meta.setattrAsync(ALICE.through(ro.sessionId()), id, SetAttr.size(0), req())));
        assertFailsClean(Status.PERMISSION_DENIED, () -> join(meta.setattrAsync(ALICE.through(12345), id, SetAttr.size(0), req())));
        OpenResult other = createOpen(ALICE, home, "other", 0644, false, RW);
        assertFailsClean(Status.PERMISSION_DENIED, () -> join(meta.setattrAsync(ALICE.through(other.sessionId()), id, SetAttr.size(0), req())));
        // the session does not stand in for ownership
        assertFailsClean(Status.NOT_PERMITTED, () -> join(meta.setattrAsync(BOB.through(o.sessionId()), id, SetAttr.mode(0777), req())));
        // once closed, the session allows nothing
        join(meta.closeAsync(ALICE, id, o.sessionId(), 0, false, req()));
        assertFailsClean(Status.PERMISSION_DENIED, () -> join(meta.setattrAsync(ALICE.through(o.sessionId()), id, SetAttr.size(0), req())));
        Fsck.check(kv);
    }

    @Test
    void someoneWhoMayWriteAFileMayClearItsSetIdBitsAndNothingElse() {
        InodeAttrs home = mkdir(Caller.ROOT, ROOT, "home", 0777);
        InodeAttrs f = create(ALICE, home.id(), "suid", 06777);
        assertThat(f.mode()).isEqualTo(06777);
        var id = f.id();
        assertFailsClean(Status.NOT_PERMITTED, () -> join(meta.setattrAsync(BOB, id, SetAttr.mode(06775), req())));
        assertFailsClean(Status.NOT_PERMITTED, () -> join(meta.setattrAsync(BOB, id, SetAttr.mode(04777 | 01000), req())));
        assertFailsClean(Status.NOT_PERMITTED, () -> join(meta.setattrAsync(BOB, id, SetAttr.mode(06777), req())));
        assertThat(join(meta.setattrAsync(BOB, id, SetAttr.mode(02777), req())).mode()).isEqualTo(02777);
        assertThat(join(meta.setattrAsync(BOB, id, SetAttr.mode(0777), req())).mode()).isEqualTo(0777);
        // without write permission: no
        InodeAttrs g = create(ALICE, home.id(), "ro", 04755);
        assertFailsClean(Status.NOT_PERMITTED, () -> join(meta.setattrAsync(BOB, g.id(), SetAttr.mode(0755), req())));
        Fsck.check(kv);
    }

    @Test
    void writesAndTruncatesByAnotherUserClearTheSetIdBitsTheOwnersDoNot() {
        InodeAttrs home = mkdir(Caller.ROOT, ROOT, "home", 0777);
        InodeAttrs f = create(ALICE, home.id(), "suid", 06777);
        OpenResult bob = join(meta.openAsync(BOB, f.id(), OpenFlags.WRITE, 7, req()));
        InodeAttrs closed = join(meta.closeAsync(BOB, f.id(), bob.sessionId(), 1, true, req()));
        assertThat(closed.mode()).as("S_ISGID goes with S_IXGRP set").isEqualTo(0777);

        InodeAttrs noGroupX = create(ALICE, home.id(), "locking", 06767);
        InodeAttrs cut = join(meta.setattrAsync(BOB, noGroupX.id(), SetAttr.size(0), req()));
        assertThat(cut.mode()).as("without S_IXGRP, S_ISGID means mandatory locking and stays").isEqualTo(02767);

        InodeAttrs own = create(ALICE, home.id(), "own", 04755);
        OpenResult alice = join(meta.openAsync(ALICE, own.id(), OpenFlags.WRITE, 7, req()));
        assertThat(join(meta.fsyncAsync(ALICE, own.id(), alice.sessionId(), 5, req())).mode()).isEqualTo(04755);
        assertThat(join(meta.setattrAsync(ALICE, own.id(), SetAttr.size(1), req())).mode()).isEqualTo(04755);
        assertThat(join(meta.setattrAsync(Caller.ROOT, own.id(), SetAttr.size(0), req())).mode()).isEqualTo(04755);
        OpenResult root = join(meta.openAsync(Caller.ROOT, own.id(), OpenFlags.WRITE, 7, req()));
        assertThat(join(meta.closeAsync(Caller.ROOT, own.id(), root.sessionId(), 3, true, req())).mode()).isEqualTo(04755);
        Fsck.check(kv);
    }
}
