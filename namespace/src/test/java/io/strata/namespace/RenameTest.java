package io.strata.namespace;

import io.strata.protocol.meta.Caller;
import io.strata.protocol.meta.InodeAttrs;
import static org.assertj.core.api.Assertions.assertThat;

import io.strata.core.InodeId;
import io.strata.core.Status;
import org.junit.jupiter.api.Test;

class RenameTest extends MetaFixture {
    private void rename(InodeId sp, String sn, InodeId dp, String dn) {
        join(meta.renameAsync(Caller.ROOT, sp, sn, dp, dn, false, req()));
    }

    @Test
    void renamesWithinAndAcrossDirectories() {
        InodeAttrs a = mkdir(ROOT, "a");
        InodeAttrs b = mkdir(ROOT, "b");
        InodeAttrs f = create(a.id(), "f");
        rename(a.id(), "f", a.id(), "g");
        assertThat(lookup(a.id(), "g").id()).isEqualTo(f.id());
        rename(a.id(), "g", b.id(), "h");
        assertThat(lookup(b.id(), "h").id()).isEqualTo(f.id());
        assertFailsClean(Status.NOT_FOUND, () -> lookup(a.id(), "g"));
        InodeAttrs sub = mkdir(a.id(), "sub");
        rename(a.id(), "sub", b.id(), "moved");
        InodeAttrs moved = lookup(b.id(), "moved");
        assertThat(moved.id()).isEqualTo(sub.id());
        assertThat(moved.parent()).isEqualTo(b.id());
        assertThat(lookup(moved.id(), "..").id()).isEqualTo(b.id());
        assertThat(join(meta.policyGetAsync(Caller.ROOT, sub.id())).path()).isEqualTo("/b/moved");
        Fsck.check(kv);
    }

    @Test
    void replacesTargetsAsPosixSays() {
        InodeAttrs d = mkdir(ROOT, "d");
        InodeAttrs f1 = create(d.id(), "f1");
        InodeAttrs f2 = create(d.id(), "f2");
        rename(d.id(), "f1", d.id(), "f2"); // a file replaces a file; the old one is freed
        assertThat(lookup(d.id(), "f2").id()).isEqualTo(f1.id());
        assertFailsClean(Status.NOT_FOUND, () -> stat(f2.id()));
        assertThat(join(meta.gcQueueLengthAsync())).isEqualTo(1);

        InodeAttrs e1 = mkdir(d.id(), "e1");
        InodeAttrs e2 = mkdir(d.id(), "e2");
        rename(d.id(), "e1", d.id(), "e2"); // a directory replaces an empty directory
        assertThat(lookup(d.id(), "e2").id()).isEqualTo(e1.id());
        assertFailsClean(Status.NOT_FOUND, () -> stat(e2.id()));

        mkdir(d.id(), "full");
        create(lookup(d.id(), "full").id(), "x");
        mkdir(d.id(), "dir");
        assertFailsClean(Status.DIRECTORY_NOT_EMPTY, () -> rename(d.id(), "dir", d.id(), "full"));
        assertFailsClean(Status.NOT_A_DIRECTORY, () -> rename(d.id(), "dir", d.id(), "f2"));
        assertFailsClean(Status.IS_A_DIRECTORY, () -> rename(d.id(), "f2", d.id(), "dir"));
        assertFailsClean(Status.ALREADY_EXISTS, () -> join(meta.renameAsync(Caller.ROOT, d.id(), "f2", d.id(), "dir", true, req())));
        assertFailsClean(Status.NOT_FOUND, () -> rename(d.id(), "nothing", d.id(), "x"));

        // two names of one file: nothing happens
        join(meta.linkAsync(Caller.ROOT, f1.id(), d.id(), "alias", req()));
        rename(d.id(), "f2", d.id(), "alias");
        assertThat(lookup(d.id(), "f2").id()).isEqualTo(f1.id());
        assertThat(stat(f1.id()).nlink()).isEqualTo(2);
        Fsck.check(kv);
    }

    @Test
    void refusesToMoveADirectoryIntoItsOwnSubtree() {
        InodeAttrs a = mkdir(ROOT, "a");
        InodeAttrs b = mkdir(a.id(), "b");
        InodeAttrs c = mkdir(b.id(), "c");
        assertFailsClean(Status.INVALID_ARGUMENT, () -> rename(ROOT, "a", c.id(), "a"));
        assertFailsClean(Status.INVALID_ARGUMENT, () -> rename(ROOT, "a", a.id(), "self"));
        assertFailsClean(Status.INVALID_NAME, () -> rename(ROOT, "a", ROOT, ".."));
        rename(b.id(), "c", ROOT, "c"); // moving up is fine
        Fsck.check(kv);
    }
}
