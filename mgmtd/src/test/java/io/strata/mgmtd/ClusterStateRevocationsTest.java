package io.strata.mgmtd;

import static org.assertj.core.api.Assertions.assertThat;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.strata.protocol.mgmtd.MgmtdMessage.Revocation;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The revoked tokens in the replicated state: kept until they expire, in the snapshot, and from a log entry alike. */
class ClusterStateRevocationsTest {
    static final String A = "a".repeat(32);
    static final String B = "b".repeat(32);
    static final String C = "c".repeat(32);

    @Test
    void revocationsAreKeptUntilTheirTokenExpires() {
        ClusterState s = new ClusterState();
        assertThat(s.apply(new MgmtdCommand.Revoke(new Revocation(A, 1_000), 100)).value()).isEqualTo(1);
        assertThat(s.apply(new MgmtdCommand.Revoke(new Revocation(B, 2_000), 100)).value()).isEqualTo(2);
        assertThat(s.apply(new MgmtdCommand.Revoke(new Revocation(C, Revocation.FOR_GOOD), 100)).value()).isEqualTo(3);
        assertThat(s.revoked(999)).containsExactly(new Revocation(A, 1_000), new Revocation(B, 2_000), new Revocation(C, Revocation.FOR_GOOD));
        assertThat(s.revoked(1_000)).as("expired tokens are refused anyway").extracting(Revocation::tokenId).containsExactly(B, C);
        // the next revocation forgets the expired ones on every peer alike (the leader's clock is in the entry)
        assertThat(s.apply(new MgmtdCommand.Revoke(new Revocation(A, 5_000), 1_500)).value()).as("A again, B and C").isEqualTo(3);
        assertThat(s.apply(new MgmtdCommand.Revoke(new Revocation(B, 1_800), 1_500)).value()).as("an earlier expiry does not shorten it")
                .isEqualTo(3);
        assertThat(s.revoked(1_900)).contains(new Revocation(B, 2_000));
    }

    @Test
    void revocationsSurviveASnapshotAndAFormat3SnapshotLoadsWithNone() {
        ClusterState s = new ClusterState();
        s.apply(new MgmtdCommand.Revoke(new Revocation(A, 1_000), 100));
        s.apply(new MgmtdCommand.Revoke(new Revocation(B, Revocation.FOR_GOOD), 100));
        ByteBuf snap = Unpooled.buffer();
        try {
            s.encode(snap);
            ClusterState back = new ClusterState();
            back.decode(snap.duplicate());
            assertThat(back.revoked(0)).isEqualTo(s.revoked(0)).hasSize(2);
            ClusterState empty = new ClusterState();
            ByteBuf none = Unpooled.buffer();
            empty.encode(none);
            ByteBuf v3 = none.slice(0, none.readableBytes() - 4); // without the revocation count
            v3.setInt(4, 3);
            ClusterState old = new ClusterState();
            old.decode(v3);
            assertThat(old.revoked(0)).isEmpty();
            none.release();
        } finally {
            snap.release();
        }
    }

    @Test
    void theLogEntryRoundTrips() {
        MgmtdCommand c = new MgmtdCommand.Revoke(new Revocation(A, 1_000), 100);
        ByteBuf b = Unpooled.buffer();
        try {
            MgmtdCommand.encode(c, b);
            assertThat(MgmtdCommand.decode(b)).isEqualTo(c);
        } finally {
            b.release();
        }
        assertThat(List.of(c)).hasSize(1);
    }
}
