package io.strata.namespace;

import io.strata.protocol.meta.Caller;
import io.strata.protocol.meta.InodeAttrs;
import io.strata.protocol.meta.OpenFlags;
import io.strata.protocol.meta.SetAttr;
import static org.assertj.core.api.Assertions.assertThat;

import io.strata.core.Status;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Each operation checks owner, group and mode bits; root bypasses them. */
class PermissionTest extends MetaFixture {
    static final Caller CAROL_IN_ALICES_GROUP = Caller.of(1002, 2000, 1000);

    @Test
    void directoryBitsGateLookupListingAndChanges() {
        assertFailsClean(Status.PERMISSION_DENIED, () -> mkdir(ALICE, ROOT, "mine", 0755)); // / is 0755 root:root
        InodeAttrs home = mkdir(Caller.ROOT, ROOT, "home", 0777);
        InodeAttrs priv = mkdir(ALICE, home.id(), "alice", 0750);
        assertThat(priv.uid()).isEqualTo(1000);
        create(ALICE, priv.id(), "notes", 0640);
        // bob: other, no bits on alice's directory
        assertFailsClean(Status.PERMISSION_DENIED, () -> join(meta.lookupAsync(BOB, priv.id(), "notes")));
        assertFailsClean(Status.PERMISSION_DENIED, () -> join(meta.readdirAsync(BOB, priv.id(), null, 10, false)));
        assertFailsClean(Status.PERMISSION_DENIED, () -> create(BOB, priv.id(), "intruder", 0644));
        assertFailsClean(Status.PERMISSION_DENIED, () -> join(meta.unlinkAsync(BOB, priv.id(), "notes", req())));
        assertFailsClean(Status.PERMISSION_DENIED, () -> join(meta.resolveAsync(BOB, "/home/alice/notes")));
        // carol is in alice's group: r-x, so she may look and list but not change
        assertThat(join(meta.lookupAsync(CAROL_IN_ALICES_GROUP, priv.id(), "notes")).uid()).isEqualTo(1000);
        assertThat(join(meta.readdirAsync(CAROL_IN_ALICES_GROUP, priv.id(), null, 10, false)).entries()).hasSize(1);
        assertFailsClean(Status.PERMISSION_DENIED, () -> create(CAROL_IN_ALICES_GROUP, priv.id(), "x", 0644));
        assertFailsClean(Status.PERMISSION_DENIED, () -> join(meta.renameAsync(CAROL_IN_ALICES_GROUP, priv.id(), "notes", priv.id(), "n2", false, req())));
        // root bypasses the bits
        assertThat(join(meta.readdirAsync(Caller.ROOT, priv.id(), null, 10, false)).entries()).hasSize(1);
        create(Caller.ROOT, priv.id(), "from-root", 0600);
    }

    @Test
    void fileBitsGateOpenTruncateAndAttributes() {
        InodeAttrs home = mkdir(Caller.ROOT, ROOT, "home", 0777);
        InodeAttrs f = create(ALICE, home.id(), "f", 0640);
        assertThat(f.gid()).isEqualTo(1000);
        assertFailsClean(Status.PERMISSION_DENIED, () -> join(meta.openAsync(BOB, f.id(), OpenFlags.READ, 1, req())));
        assertFailsClean(Status.PERMISSION_DENIED, () -> join(meta.openAsync(CAROL_IN_ALICES_GROUP, f.id(), OpenFlags.WRITE, 1, req())));
        join(meta.openAsync(CAROL_IN_ALICES_GROUP, f.id(), OpenFlags.READ, 1, req()));
        assertFailsClean(Status.PERMISSION_DENIED, () -> join(meta.setattrAsync(CAROL_IN_ALICES_GROUP, f.id(), SetAttr.size(0), req())));
        assertFailsClean(Status.PERMISSION_DENIED, () -> join(meta.setxattrAsync(BOB, f.id(), "user.x", new byte[1], 0, req())));
        assertFailsClean(Status.PERMISSION_DENIED, () -> join(meta.getxattrAsync(BOB, f.id(), "user.x")));
        // owner-only operations are EPERM
        assertFailsClean(Status.NOT_PERMITTED, () -> join(meta.setattrAsync(BOB, f.id(), SetAttr.mode(0777), req())));
        assertFailsClean(Status.NOT_PERMITTED, () -> join(meta.setattrAsync(ALICE, f.id(), SetAttr.owner(1001, null), req())));
        assertFailsClean(Status.NOT_PERMITTED, () -> join(meta.setattrAsync(ALICE, f.id(), SetAttr.owner(null, 5555), req())));
        assertFailsClean(Status.NOT_PERMITTED, () -> join(meta.setattrAsync(CAROL_IN_ALICES_GROUP, f.id(), SetAttr.times(1L, 1L), req())));
        assertFailsClean(Status.PERMISSION_DENIED, () -> join(meta.setattrAsync(BOB, f.id(), SetAttr.times(SetAttr.NOW, SetAttr.NOW), req())));
        // what the owner and root may do
        assertThat(join(meta.setattrAsync(ALICE, f.id(), SetAttr.mode(0600), req())).mode()).isEqualTo(0600);
        Caller aliceWithGroup = Caller.of(1000, 1000, 3000);
        assertThat(join(meta.setattrAsync(aliceWithGroup, f.id(), SetAttr.owner(null, 3000), req())).gid()).isEqualTo(3000);
        assertThat(join(meta.setattrAsync(Caller.ROOT, f.id(), SetAttr.owner(1001, 1001), req())).uid()).isEqualTo(1001);
        InodeAttrs t = join(meta.setattrAsync(Caller.ROOT, f.id(), SetAttr.times(5L, 7L), req()));
        assertThat(t.atimeNanos()).isEqualTo(5);
        assertThat(t.mtimeNanos()).isEqualTo(7);
    }

    @Test
    void theStickyBitProtectsOtherUsersEntries() {
        InodeAttrs tmpDir = mkdir(Caller.ROOT, ROOT, "tmp", 01777);
        create(ALICE, tmpDir.id(), "alices", 0644);
        assertFailsClean(Status.NOT_PERMITTED, () -> join(meta.unlinkAsync(BOB, tmpDir.id(), "alices", req())));
        assertFailsClean(Status.NOT_PERMITTED, () -> join(meta.renameAsync(BOB, tmpDir.id(), "alices", tmpDir.id(), "bobs", false, req())));
        join(meta.unlinkAsync(ALICE, tmpDir.id(), "alices", req()));
    }

    @Test
    void onlyTheOwnerOrRootSetsADirectorysPolicy() {
        InodeAttrs home = mkdir(Caller.ROOT, ROOT, "home", 0777);
        InodeAttrs a = mkdir(ALICE, home.id(), "a", 0777);
        assertFailsClean(Status.NOT_PERMITTED, () -> join(meta.policySetAsync(BOB, a.id(), List.of("replicas=2"), req())));
        assertThat(join(meta.policySetAsync(ALICE, a.id(), List.of("replicas=2"), req())).overrides()).containsEntry("replicas", "2");
        assertThat(join(meta.policySetAsync(Caller.ROOT, a.id(), List.of("replicas=1"), req())).overrides()).containsEntry("replicas", "1");
    }

    @Test
    void setgidDirectoriesHandTheirGroupDown() {
        InodeAttrs shared = mkdir(Caller.ROOT, ROOT, "shared", 02777);
        join(meta.setattrAsync(Caller.ROOT, shared.id(), SetAttr.owner(null, 4242), req()));
        InodeAttrs f = create(ALICE, shared.id(), "f", 0644);
        InodeAttrs d = mkdir(ALICE, shared.id(), "d", 0755);
        assertThat(f.gid()).isEqualTo(4242);
        assertThat(d.gid()).isEqualTo(4242);
        assertThat(d.mode() & 02000).isEqualTo(02000);
    }
}
