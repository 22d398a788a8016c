package io.strata.namespace;

import static org.assertj.core.api.Assertions.assertThat;

import io.strata.core.InodeId;
import io.strata.core.util.Futures;
import io.strata.namespace.kv.Bytes;
import io.strata.protocol.meta.Caller;
import io.strata.protocol.meta.Codec;
import io.strata.protocol.meta.InodeAttrs;
import io.strata.protocol.meta.InodeType;
import io.strata.protocol.meta.SetAttr;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;

/** A directory's link count is 2 plus its subdirectories, through mkdir, rmdir and rename. */
class DirectoryLinksTest extends MetaFixture {
    long nlink(InodeId dir) {
        return stat(dir).nlink();
    }

    void rename(InodeId sp, String sn, InodeId dp, String dn) {
        join(meta.renameAsync(Caller.ROOT, sp, sn, dp, dn, false, req()));
    }

    @Test
    void mkdirAndRmdirCountSubdirectoriesOnly() {
        assertThat(nlink(ROOT)).isEqualTo(2);
        InodeAttrs d = mkdir(ROOT, "d");
        assertThat(d.nlink()).as("a new directory").isEqualTo(2);
        assertThat(nlink(ROOT)).isEqualTo(3);
        mkdir(d.id(), "s1");
        mkdir(d.id(), "s2");
        create(d.id(), "file");
        join(meta.symlinkAsync(Caller.ROOT, d.id(), "link", "s1", req()));
        join(meta.mknodAsync(Caller.ROOT, d.id(), "fifo", InodeType.FIFO, 0644, 0, req()));
        assertThat(nlink(d.id())).as("files, symlinks and FIFOs add no link").isEqualTo(4);
        assertThat(lookup(ROOT, "d").nlink()).isEqualTo(4);
        assertThat(join(meta.resolveAsync(Caller.ROOT, "/d")).nlink()).isEqualTo(4);
        assertThat(join(meta.readdirAsync(Caller.ROOT, ROOT, null, 10, true)).entries().get(0).attrs().nlink()).isEqualTo(4);
        assertThat(join(meta.setattrAsync(Caller.ROOT, d.id(), SetAttr.mode(0700), req())).nlink())
                .as("what setattr returns").isEqualTo(4);
        join(meta.rmdirAsync(Caller.ROOT, d.id(), "s1", req()));
        assertThat(nlink(d.id())).isEqualTo(3);
        join(meta.unlinkAsync(Caller.ROOT, d.id(), "file", req()));
        assertThat(nlink(d.id())).isEqualTo(3);
        Fsck.check(kv);
    }

    @Test
    void renameMovesTheDotDotLinkBetweenParents() {
        InodeAttrs src = mkdir(ROOT, "src");
        InodeAttrs dst = mkdir(ROOT, "dst");
        mkdir(src.id(), "child");
        assertThat(nlink(src.id())).isEqualTo(3);
        assertThat(nlink(dst.id())).isEqualTo(2);
        rename(src.id(), "child", dst.id(), "moved");
        assertThat(nlink(src.id())).isEqualTo(2);
        assertThat(nlink(dst.id())).isEqualTo(3);
        rename(dst.id(), "moved", dst.id(), "renamed"); // within one parent: nothing changes
        assertThat(nlink(dst.id())).isEqualTo(3);
        assertThat(nlink(ROOT)).isEqualTo(4);
        // a file moved between parents changes no directory's count
        create(src.id(), "f");
        rename(src.id(), "f", dst.id(), "f");
        assertThat(nlink(src.id())).isEqualTo(2);
        assertThat(nlink(dst.id())).isEqualTo(3);
        Fsck.check(kv);
    }

    @Test
    void renameOverAnEmptyDirectoryDropsTheVictimsLink() {
        InodeAttrs a = mkdir(ROOT, "a");
        InodeAttrs b = mkdir(ROOT, "b");
        mkdir(a.id(), "x");
        mkdir(b.id(), "y");
        mkdir(b.id(), "z");
        rename(a.id(), "x", b.id(), "y"); // x replaces the empty y
        assertThat(nlink(a.id())).isEqualTo(2);
        assertThat(nlink(b.id())).isEqualTo(4);
        rename(b.id(), "y", b.id(), "z"); // within b, over the empty z
        assertThat(nlink(b.id())).isEqualTo(3);
        Fsck.check(kv);
    }

    @Test
    void concurrentMkdirsInOneDirectoryAreAllCounted() {
        InodeAttrs d = mkdir(ROOT, "busy");
        List<CompletableFuture<InodeAttrs>> all = new ArrayList<>();
        for (int i = 0; i < 64; i++) {
            all.add(meta.mkdirAsync(Caller.ROOT, d.id(), "s" + i, 0755, req()));
        }
        all.forEach(f -> Futures.join(f, Duration.ofSeconds(60)));
        assertThat(nlink(d.id())).isEqualTo(66);
        for (int i = 0; i < 64; i += 2) {
            join(meta.rmdirAsync(Caller.ROOT, d.id(), "s" + i, req()));
        }
        assertThat(nlink(d.id())).isEqualTo(34);
        Fsck.check(kv);
    }

    @Test
    void aDirectoryMadeBeforeSubdirectoriesWereCountedKeepsReportingOne() {
        // a directory record as the namespace wrote it before (link count 1, no counter)
        InodeAttrs d = mkdir(ROOT, "old");
        InodeAttrs legacy = new InodeAttrs(d.id(), InodeType.DIRECTORY, d.mode(), d.uid(), d.gid(), 1, 0, 1, d.atimeNanos(),
                d.mtimeNanos(), d.ctimeNanos(), d.parent(), d.name(), "", null, Map.of(), 0, 0);
        kv.run(tx -> {
            tx.set(KeySpace.inode(d.id()), Codec.inodeBytes(legacy));
            return null;
        });
        mkdir(d.id(), "sub");
        assertThat(nlink(d.id())).as("not counted: 1, as btrfs reports").isEqualTo(1);
        assertThat(kv.<byte[]>run(tx -> tx.get(KeySpace.subdirs(d.id())))).as("no counter started for it").isNull();
        InodeAttrs moved = mkdir(ROOT, "new");
        rename(d.id(), "sub", moved.id(), "sub");
        assertThat(nlink(moved.id())).isEqualTo(3);
        rename(moved.id(), "sub", d.id(), "back");
        assertThat(nlink(moved.id())).isEqualTo(2);
        assertThat(nlink(d.id())).isEqualTo(1);
        join(meta.rmdirAsync(Caller.ROOT, d.id(), "back", req()));
        join(meta.rmdirAsync(Caller.ROOT, ROOT, "old", req()));
        assertThat(kv.<byte[]>run(tx -> tx.get(KeySpace.subdirs(d.id())))).isNull();
        assertThat(Bytes.readLe64(kv.<byte[]>run(tx -> tx.get(KeySpace.subdirs(ROOT))))).isEqualTo(1);
        Fsck.check(kv);
    }
}
