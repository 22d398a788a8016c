package io.strata.namespace;

import static org.assertj.core.api.Assertions.assertThat;

import io.strata.core.InodeId;
import io.strata.core.Status;
import io.strata.protocol.meta.Caller;
import io.strata.protocol.meta.DeviceNumber;
import io.strata.protocol.meta.DirEntry;
import io.strata.protocol.meta.InodeAttrs;
import io.strata.protocol.meta.InodeType;
import io.strata.protocol.meta.OpenFlags;
import io.strata.protocol.meta.RequestId;
import io.strata.protocol.meta.SetAttr;
import java.util.List;
import org.junit.jupiter.api.Test;

/** FIFOs, sockets and devices: names with a type, mode, owner and device number, and no data. */
class SpecialFilesTest extends MetaFixture {
    InodeAttrs mknod(Caller c, InodeId parent, String name, InodeType type, int mode, long rdev) {
        return join(meta.mknodAsync(c, parent, name, type, mode, rdev, req()));
    }

    @Test
    void eachSpecialTypeIsStoredListedAndLookedUpWithItsType() {
        InodeAttrs d = mkdir(ROOT, "dev");
        long null13 = DeviceNumber.of(1, 3);
        long sda = DeviceNumber.of(8, 0);
        InodeAttrs fifo = mknod(Caller.ROOT, d.id(), "fifo", InodeType.FIFO, 0644, 0);
        InodeAttrs sock = mknod(Caller.ROOT, d.id(), "sock", InodeType.SOCKET, 0755, 0);
        InodeAttrs chr = mknod(Caller.ROOT, d.id(), "null", InodeType.CHAR_DEVICE, 0666, null13);
        InodeAttrs blk = mknod(Caller.ROOT, d.id(), "sda", InodeType.BLOCK_DEVICE, 0660, sda);
        assertThat(List.of(fifo, sock, chr, blk)).allSatisfy(a -> {
            assertThat(a.isSpecial()).isTrue();
            assertThat(a.nlink()).isEqualTo(1);
            assertThat(a.length()).isZero();
            assertThat(a.layout()).isNull();
        });
        assertThat(lookup(d.id(), "fifo").type()).isEqualTo(InodeType.FIFO);
        assertThat(lookup(d.id(), "fifo").mode()).isEqualTo(0644);
        assertThat(lookup(d.id(), "sock").type()).isEqualTo(InodeType.SOCKET);
        assertThat(lookup(d.id(), "null").rdev()).isEqualTo(null13);
        assertThat(stat(blk.id()).rdev()).isEqualTo(sda);
        assertThat(stat(blk.id()).type()).isEqualTo(InodeType.BLOCK_DEVICE);
        assertThat(stat(fifo.id()).rdev()).isZero();
        List<DirEntry> listed = join(meta.readdirAsync(Caller.ROOT, d.id(), null, 100, true)).entries();
        assertThat(listed).extracting(DirEntry::name).containsExactly("fifo", "null", "sda", "sock");
        assertThat(listed).extracting(DirEntry::type)
                .containsExactly(InodeType.FIFO, InodeType.CHAR_DEVICE, InodeType.BLOCK_DEVICE, InodeType.SOCKET);
        assertThat(listed.get(1).attrs().rdev()).isEqualTo(null13);
        assertThat(join(meta.statfsAsync(Caller.ROOT)).inodes()).isEqualTo(6); // root, dev and the four
        Fsck.check(kv);
    }

    @Test
    void devicesNeedRootFifosAndSocketsOnlyAWritableParent() {
        InodeAttrs home = mkdir(Caller.ROOT, ROOT, "home", 0777);
        assertFailsClean(Status.NOT_PERMITTED, () -> mknod(ALICE, home.id(), "c", InodeType.CHAR_DEVICE, 0600, DeviceNumber.of(1, 3)));
        assertFailsClean(Status.NOT_PERMITTED, () -> mknod(ALICE, home.id(), "b", InodeType.BLOCK_DEVICE, 0600, DeviceNumber.of(8, 0)));
        InodeAttrs f = mknod(ALICE, home.id(), "fifo", InodeType.FIFO, 0600, 0);
        assertThat(f.uid()).isEqualTo(1000);
        assertThat(f.gid()).isEqualTo(1000);
        InodeAttrs s = mknod(ALICE, home.id(), "sock", InodeType.SOCKET, 0755, 0);
        assertThat(s.uid()).isEqualTo(1000);
        InodeAttrs priv = mkdir(ALICE, home.id(), "alice", 0755);
        assertFailsClean(Status.PERMISSION_DENIED, () -> mknod(BOB, priv.id(), "fifo", InodeType.FIFO, 0644, 0));
        // a setgid directory hands its group down, as to any create
        InodeAttrs shared = mkdir(Caller.ROOT, ROOT, "shared", 02777);
        join(meta.setattrAsync(Caller.ROOT, shared.id(), SetAttr.owner(null, 4242), req()));
        assertThat(mknod(BOB, shared.id(), "p", InodeType.FIFO, 0644, 0).gid()).isEqualTo(4242);
        Fsck.check(kv);
    }

    @Test
    void badRequestsGetAClearStatusAndWriteNothing() {
        mknod(Caller.ROOT, ROOT, "taken", InodeType.FIFO, 0644, 0);
        assertFailsClean(Status.ALREADY_EXISTS, () -> mknod(Caller.ROOT, ROOT, "taken", InodeType.SOCKET, 0644, 0));
        assertFailsClean(Status.INVALID_ARGUMENT, () -> mknod(Caller.ROOT, ROOT, "f", InodeType.FILE, 0644, 0));
        assertFailsClean(Status.INVALID_ARGUMENT, () -> mknod(Caller.ROOT, ROOT, "d", InodeType.DIRECTORY, 0755, 0));
        assertFailsClean(Status.INVALID_ARGUMENT, () -> mknod(Caller.ROOT, ROOT, "l", InodeType.SYMLINK, 0777, 0));
        assertFailsClean(Status.INVALID_ARGUMENT, () -> mknod(Caller.ROOT, ROOT, "p", InodeType.FIFO, 0644, 5));
        assertFailsClean(Status.INVALID_ARGUMENT, () -> mknod(Caller.ROOT, ROOT, "s", InodeType.SOCKET, 0644, DeviceNumber.of(1, 1)));
        assertFailsClean(Status.INVALID_ARGUMENT, () -> mknod(Caller.ROOT, ROOT, "m", InodeType.FIFO, 010644, 0));
        assertFailsClean(Status.INVALID_NAME, () -> mknod(Caller.ROOT, ROOT, "a/b", InodeType.FIFO, 0644, 0));
        assertFailsClean(Status.NAME_TOO_LONG, () -> mknod(Caller.ROOT, ROOT, "x".repeat(256), InodeType.FIFO, 0644, 0));
        InodeAttrs fifo = lookup(ROOT, "taken");
        assertFailsClean(Status.NOT_A_DIRECTORY, () -> mknod(Caller.ROOT, fifo.id(), "under", InodeType.FIFO, 0644, 0));
    }

    @Test
    void specialFilesAreNeverOpenedOrTruncatedButRenamedLinkedChangedAndRemovedLikeFiles() {
        InodeAttrs a = mkdir(ROOT, "a");
        InodeAttrs b = mkdir(ROOT, "b");
        InodeAttrs fifo = mknod(Caller.ROOT, a.id(), "p", InodeType.FIFO, 0666, 0);
        InodeAttrs dev = mknod(Caller.ROOT, a.id(), "c", InodeType.CHAR_DEVICE, 0666, DeviceNumber.of(10, 200));
        assertFailsClean(Status.INVALID_ARGUMENT, () -> join(meta.openAsync(Caller.ROOT, fifo.id(), OpenFlags.READ, 1, req())));
        assertFailsClean(Status.INVALID_ARGUMENT, () -> join(meta.setattrAsync(Caller.ROOT, dev.id(), SetAttr.size(0), req())));
        assertFailsClean(Status.INVALID_ARGUMENT, () -> join(meta.readlinkAsync(Caller.ROOT, fifo.id())));
        assertFailsClean(Status.NOT_A_DIRECTORY, () -> join(meta.resolveAsync(Caller.ROOT, "/a/p/x")));

        InodeAttrs chmodded = join(meta.setattrAsync(Caller.ROOT, fifo.id(), SetAttr.mode(0600), req()));
        assertThat(chmodded.mode()).isEqualTo(0600);
        assertThat(chmodded.type()).isEqualTo(InodeType.FIFO);
        InodeAttrs chowned = join(meta.setattrAsync(Caller.ROOT, dev.id(), SetAttr.owner(1000, 1000), req()));
        assertThat(chowned.uid()).isEqualTo(1000);
        assertThat(chowned.rdev()).isEqualTo(DeviceNumber.of(10, 200));
        assertThat(join(meta.setattrAsync(Caller.ROOT, dev.id(), SetAttr.times(5L, 7L), req())).mtimeNanos()).isEqualTo(7);

        join(meta.renameAsync(Caller.ROOT, a.id(), "p", b.id(), "q", false, req()));
        assertThat(lookup(b.id(), "q").id()).isEqualTo(fifo.id());
        assertThat(lookup(b.id(), "q").type()).isEqualTo(InodeType.FIFO);
        InodeAttrs linked = join(meta.linkAsync(Caller.ROOT, dev.id(), b.id(), "c2", req()));
        assertThat(linked.nlink()).isEqualTo(2);
        assertThat(lookup(b.id(), "c2").rdev()).isEqualTo(DeviceNumber.of(10, 200));
        // a special file replaced by rename, and removed by unlink: the inode goes when its last name does
        join(meta.renameAsync(Caller.ROOT, b.id(), "q", a.id(), "c", false, req()));
        assertThat(stat(dev.id()).nlink()).isEqualTo(1);
        join(meta.unlinkAsync(Caller.ROOT, b.id(), "c2", req()));
        assertFailsClean(Status.NOT_FOUND, () -> stat(dev.id()));
        join(meta.unlinkAsync(Caller.ROOT, a.id(), "c", req()));
        assertFailsClean(Status.NOT_FOUND, () -> stat(fifo.id()));
        assertThat(join(meta.gcQueueLengthAsync())).as("no chunks to free for special files").isZero();
        assertFailsClean(Status.IS_A_DIRECTORY, () -> join(meta.unlinkAsync(Caller.ROOT, ROOT, "a", req())));
        join(meta.rmdirAsync(Caller.ROOT, ROOT, "a", req()));
        Fsck.check(kv);
    }

    @Test
    void aRetriedMknodIsAppliedOnce() {
        RequestId r = req();
        InodeAttrs first = join(meta.mknodAsync(Caller.ROOT, ROOT, "p", InodeType.FIFO, 0644, 0, r));
        InodeAttrs again = join(meta.mknodAsync(Caller.ROOT, ROOT, "p", InodeType.FIFO, 0644, 0, r));
        assertThat(again).isEqualTo(first);
        assertFailsClean(Status.ALREADY_EXISTS, () -> join(meta.mknodAsync(Caller.ROOT, ROOT, "p", InodeType.FIFO, 0644, 0, req())));
        Fsck.check(kv);
    }
}
