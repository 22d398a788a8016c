package io.strata.namespace;

import io.strata.protocol.meta.Caller;
import io.strata.protocol.meta.DirEntry;
import io.strata.protocol.meta.DirPage;
import io.strata.protocol.meta.InodeAttrs;
import io.strata.protocol.meta.InodeType;
import io.strata.protocol.meta.OpenFlags;
import io.strata.protocol.meta.OpenResult;
import io.strata.protocol.meta.SetAttr;
import io.strata.protocol.meta.StatFs;
import static org.assertj.core.api.Assertions.assertThat;

import io.strata.core.InodeId;
import io.strata.core.Status;
import java.nio.charset.StandardCharsets;
import io.strata.namespace.kv.KeyValue;
import java.util.List;
import org.junit.jupiter.api.Test;

class NamespaceOpsTest extends MetaFixture {
    @Test
    void filesDirectoriesSymlinksAndLinksBehaveAsPosixSays() {
        InodeAttrs d = mkdir(ROOT, "data");
        assertThat(d.isDirectory()).isTrue();
        assertThat(d.parent()).isEqualTo(ROOT);
        InodeAttrs f = create(d.id(), "a.bin");
        assertThat(f.isFile()).isTrue();
        assertThat(f.nlink()).isEqualTo(1);
        assertThat(f.layout()).isNotNull();
        assertThat(lookup(d.id(), "a.bin").id()).isEqualTo(f.id());
        assertThat(lookup(d.id(), ".").id()).isEqualTo(d.id());
        assertThat(lookup(d.id(), "..").id()).isEqualTo(ROOT);
        assertThat(join(meta.resolveAsync(Caller.ROOT, "/data/a.bin")).id()).isEqualTo(f.id());

        InodeAttrs s = join(meta.symlinkAsync(Caller.ROOT, ROOT, "link-to-data", "data", req()));
        assertThat(join(meta.readlinkAsync(Caller.ROOT, s.id()))).isEqualTo("data");
        assertThat(join(meta.resolveAsync(Caller.ROOT, "/link-to-data/a.bin")).id()).isEqualTo(f.id());

        InodeAttrs l = join(meta.linkAsync(Caller.ROOT, f.id(), ROOT, "hard", req()));
        assertThat(l.nlink()).isEqualTo(2);
        join(meta.unlinkAsync(Caller.ROOT, d.id(), "a.bin", req()));
        assertThat(stat(f.id()).nlink()).isEqualTo(1);
        assertThat(lookup(ROOT, "hard").id()).isEqualTo(f.id());

        create(d.id(), "x");
        assertFailsClean(Status.DIRECTORY_NOT_EMPTY, () -> join(meta.rmdirAsync(Caller.ROOT, ROOT, "data", req())));
    }

    @Test
    void removalChecksTypesAndEmptiness() {
        InodeAttrs d = mkdir(ROOT, "d");
        create(d.id(), "f");
        assertFailsClean(Status.DIRECTORY_NOT_EMPTY, () -> join(meta.rmdirAsync(Caller.ROOT, ROOT, "d", req())));
        assertFailsClean(Status.IS_A_DIRECTORY, () -> join(meta.unlinkAsync(Caller.ROOT, ROOT, "d", req())));
        assertFailsClean(Status.NOT_A_DIRECTORY, () -> join(meta.rmdirAsync(Caller.ROOT, d.id(), "f", req())));
        assertFailsClean(Status.NOT_FOUND, () -> join(meta.unlinkAsync(Caller.ROOT, d.id(), "nope", req())));
        assertFailsClean(Status.ALREADY_EXISTS, () -> create(d.id(), "f"));
        assertFailsClean(Status.ALREADY_EXISTS, () -> mkdir(d.id(), "f"));
        assertFailsClean(Status.NOT_PERMITTED, () -> join(meta.linkAsync(Caller.ROOT, d.id(), ROOT, "dirlink", req())));
        InodeAttrs again = join(meta.createAsync(Caller.ROOT, d.id(), "f", 0644, false, req()));
        assertThat(again.id()).isEqualTo(lookup(d.id(), "f").id());
        join(meta.unlinkAsync(Caller.ROOT, d.id(), "f", req()));
        join(meta.rmdirAsync(Caller.ROOT, ROOT, "d", req()));
        assertFailsClean(Status.NOT_FOUND, () -> lookup(ROOT, "d"));
        assertFailsClean(Status.NOT_FOUND, () -> stat(d.id()));
        Fsck.check(kv);
    }

    @Test
    void badInputGetsAClearStatusAndWritesNothing() {
        InodeAttrs file = create(ROOT, "plain");
        String long256 = "x".repeat(256);
        assertFailsClean(Status.INVALID_NAME, () -> create(ROOT, "a/b"));
        assertFailsClean(Status.INVALID_NAME, () -> mkdir(ROOT, "nul\0byte"));
        assertFailsClean(Status.INVALID_NAME, () -> create(ROOT, ""));
        assertFailsClean(Status.INVALID_NAME, () -> mkdir(ROOT, ".."));
        assertFailsClean(Status.NAME_TOO_LONG, () -> create(ROOT, long256));
        // 255 bytes of UTF-8 is the limit, counted in bytes, not characters
        String e128 = "é".repeat(128);
        assertThat(e128.getBytes(StandardCharsets.UTF_8)).hasSize(256);
        assertFailsClean(Status.NAME_TOO_LONG, () -> create(ROOT, e128));
        create(ROOT, "x".repeat(255));
        // paths through a file
        assertFailsClean(Status.NOT_A_DIRECTORY, () -> create(file.id(), "child"));
        assertFailsClean(Status.NOT_A_DIRECTORY, () -> lookup(file.id(), "child"));
        assertFailsClean(Status.NOT_A_DIRECTORY, () -> join(meta.resolveAsync(Caller.ROOT, "/plain/child")));
        assertFailsClean(Status.NOT_A_DIRECTORY, () -> join(meta.readdirAsync(Caller.ROOT, file.id(), null, 10, false)));
        // unknown inodes
        InodeId ghost = InodeId.of(987654321L);
        assertFailsClean(Status.NOT_FOUND, () -> stat(ghost));
        assertFailsClean(Status.NOT_FOUND, () -> create(ghost, "f"));
        assertFailsClean(Status.NOT_FOUND, () -> join(meta.setattrAsync(Caller.ROOT, ghost, SetAttr.mode(0600), req())));
        assertFailsClean(Status.NOT_FOUND, () -> join(meta.openAsync(Caller.ROOT, ghost, OpenFlags.READ, 1, req())));
        // other bad arguments
        assertFailsClean(Status.INVALID_ARGUMENT, () -> create(Caller.ROOT, ROOT, "m", 0100644));
        assertFailsClean(Status.INVALID_ARGUMENT, () -> join(meta.resolveAsync(Caller.ROOT, "relative/path")));
        assertFailsClean(Status.INVALID_ARGUMENT, () -> join(meta.symlinkAsync(Caller.ROOT, ROOT, "s", "", req())));
        assertFailsClean(Status.INVALID_ARGUMENT, () -> join(meta.openAsync(Caller.ROOT, file.id(), 0, 1, req())));
        assertFailsClean(Status.INVALID_ARGUMENT, () -> join(meta.readdirAsync(Caller.ROOT, ROOT, null, 0, false)));
        assertFailsClean(Status.INVALID_ARGUMENT, () -> join(meta.readlinkAsync(Caller.ROOT, file.id())));
        assertFailsClean(Status.STALE_HANDLE, () -> join(meta.closeAsync(Caller.ROOT, file.id(), 42, 10, true, req())));
        join(meta.symlinkAsync(Caller.ROOT, ROOT, "loop", "/loop", req()));
        assertFailsClean(Status.SYMLINK_LOOP, () -> join(meta.resolveAsync(Caller.ROOT, "/loop/x")));
    }

    @Test
    void extendedAttributesFollowTheirFlags() {
        InodeAttrs f = create(ROOT, "f");
        byte[] v = "value".getBytes(StandardCharsets.UTF_8);
        join(meta.setxattrAsync(Caller.ROOT, f.id(), "user.a", v, 0, req()));
        assertThat(join(meta.getxattrAsync(Caller.ROOT, f.id(), "user.a"))).isEqualTo(v);
        assertFailsClean(Status.ALREADY_EXISTS, () -> join(meta.setxattrAsync(Caller.ROOT, f.id(), "user.a", v, OpenFlags.XATTR_CREATE, req())));
        assertFailsClean(Status.NO_SUCH_ATTRIBUTE, () -> join(meta.setxattrAsync(Caller.ROOT, f.id(), "user.b", v, OpenFlags.XATTR_REPLACE, req())));
        assertFailsClean(Status.INVALID_ARGUMENT, () -> join(meta.setxattrAsync(Caller.ROOT, f.id(), "user.big", new byte[70_000], 0, req())));
        join(meta.setxattrAsync(Caller.ROOT, f.id(), "user.b", new byte[0], 0, req()));
        assertThat(join(meta.listxattrAsync(Caller.ROOT, f.id()))).containsExactly("user.a", "user.b");
        join(meta.removexattrAsync(Caller.ROOT, f.id(), "user.a", req()));
        assertFailsClean(Status.NO_SUCH_ATTRIBUTE, () -> join(meta.getxattrAsync(Caller.ROOT, f.id(), "user.a")));
        assertFailsClean(Status.NO_SUCH_ATTRIBUTE, () -> join(meta.removexattrAsync(Caller.ROOT, f.id(), "user.a", req())));
        join(meta.unlinkAsync(Caller.ROOT, ROOT, "f", req()));
        assertThat(kv.<List<KeyValue>>run(tx -> tx.getPrefix(KeySpace.XATTR.prefix(), 0))).as("xattrs of a deleted file").isEmpty();
    }

    @Test
    void readdirPagesThroughALargeDirectoryInNameOrder() {
        InodeAttrs d = mkdir(ROOT, "big");
        int n = 20_000;
        // bulk-create through the store in a few transactions, then page through the service API
        List<Integer> chunks = java.util.stream.IntStream.range(0, n / 2000).boxed().toList();
        for (int c : chunks) {
            kv.run(tx -> {
                NsTx t = new NsTx(tx, false, 1);
                for (int i = c * 2000; i < (c + 1) * 2000; i++) {
                    t.putDentry(d.id(), String.format("f%06d", i), InodeId.of(1_000_000 + i), InodeType.FILE);
                }
                return null;
            });
        }
        int seen = 0;
        String after = null;
        String last = "";
        int pages = 0;
        do {
            DirPage p = join(meta.readdirAsync(Caller.ROOT, d.id(), after, 1000, false));
            for (DirEntry e : p.entries()) {
                assertThat(e.name()).isGreaterThan(last);
                last = e.name();
                seen++;
            }
            after = p.next();
            pages++;
        } while (after != null);
        assertThat(seen).isEqualTo(n);
        assertThat(pages).isBetween(20, 21);
        create(ROOT, "x");
        DirPage withAttrs = join(meta.readdirAsync(Caller.ROOT, ROOT, null, 10, true));
        assertThat(withAttrs.entries()).extracting(DirEntry::name).containsExactly("big", "x");
        assertThat(withAttrs.entries().get(1).attrs().isFile()).isTrue();
        assertThat(withAttrs.next()).isNull();
    }

    @Test
    void statfsCountsInodesAndBytes() {
        StatFs before = join(meta.statfsAsync(Caller.ROOT));
        assertThat(before.inodes()).isEqualTo(1);
        InodeAttrs f = create(ROOT, "f");
        mkdir(ROOT, "d");
        OpenResult o = join(meta.openAsync(Caller.ROOT, f.id(), OpenFlags.WRITE, 7, req()));
        join(meta.closeAsync(Caller.ROOT, f.id(), o.sessionId(), 12345, true, req()));
        assertThat(join(meta.statfsAsync(Caller.ROOT))).isEqualTo(new StatFs(3, 12345));
        join(meta.unlinkAsync(Caller.ROOT, ROOT, "f", req()));
        assertThat(join(meta.statfsAsync(Caller.ROOT))).isEqualTo(new StatFs(2, 0));
        Fsck.check(kv);
    }
}
