package io.strata.mgmtd;

import static org.assertj.core.api.Assertions.assertThat;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.strata.core.NodeId;
import io.strata.core.Status;
import io.strata.core.TargetId;
import io.strata.protocol.mgmtd.MgmtdMessage;
import io.strata.protocol.mgmtd.NodeRole;
import io.strata.protocol.mgmtd.StoredHint;
import io.strata.protocol.routing.NodeInfo;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Scheduler hints in the replicated state: compare-and-set, limits, ids, snapshots; never a routing change. */
class ClusterStateHintsTest {
    static byte[] json(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    static List<StoredHint> all(ClusterState s) {
        return s.hints(0, Integer.MAX_VALUE, Long.MAX_VALUE).hints();
    }

    @Test
    void putsCreateAndReplaceByVersionAndDeletesCheckTheVersionUnlessZero() {
        ClusterState s = new ClusterState();
        s.apply(new MgmtdCommand.Register(new NodeInfo(NodeId.of(1), "127.0.0.1", 9101, Map.of()), NodeRole.STORAGE, 1,
                List.of(TargetId.of(101))));
        ClusterState.View before = s.view();

        ClusterState.Outcome a = s.apply(new MgmtdCommand.PutHint(0, 0, json("{\"job\":\"a\"}")));
        ClusterState.Outcome b = s.apply(new MgmtdCommand.PutHint(0, 0, json("{\"job\":\"b\"}")));
        assertThat(a.status()).isEqualTo(Status.OK);
        assertThat(a.value()).isEqualTo(1);
        assertThat(a.version()).isEqualTo(1);
        assertThat(b.value()).isEqualTo(2);
        assertThat(all(s)).containsExactly(new StoredHint(1, 1, json("{\"job\":\"a\"}")), new StoredHint(2, 1, json("{\"job\":\"b\"}")));

        ClusterState.Outcome replaced = s.apply(new MgmtdCommand.PutHint(1, 1, json("{\"job\":\"a\",\"done\":1}")));
        assertThat(replaced.status()).isEqualTo(Status.OK);
        assertThat(replaced.value()).isEqualTo(1);
        assertThat(replaced.version()).isEqualTo(2);
        ClusterState.Outcome stale = s.apply(new MgmtdCommand.PutHint(1, 1, json("{}")));
        assertThat(stale.status()).isEqualTo(Status.TXN_CONFLICT);
        assertThat(stale.message()).isEqualTo("hint 1 is at version 2, not 1");
        assertThat(s.apply(new MgmtdCommand.PutHint(9, 1, json("{}"))).status()).isEqualTo(Status.NOT_FOUND);
        assertThat(s.hints(1, 1, Long.MAX_VALUE).hints()).containsExactly(new StoredHint(1, 2, json("{\"job\":\"a\",\"done\":1}")));

        ClusterState.Outcome delStale = s.apply(new MgmtdCommand.DeleteHint(1, 1));
        assertThat(delStale.status()).isEqualTo(Status.TXN_CONFLICT);
        assertThat(delStale.message()).isEqualTo("hint 1 is at version 2, not 1");
        assertThat(s.apply(new MgmtdCommand.DeleteHint(1, 2)).status()).isEqualTo(Status.OK);
        assertThat(s.apply(new MgmtdCommand.DeleteHint(2, 0)).status()).as("0: whatever the version").isEqualTo(Status.OK);
        assertThat(s.apply(new MgmtdCommand.DeleteHint(2, 0)).status()).isEqualTo(Status.NOT_FOUND);
        assertThat(all(s)).isEmpty();

        // ids are never reused, even after every hint is gone
        assertThat(s.apply(new MgmtdCommand.PutHint(0, 0, json("{}"))).value()).isEqualTo(3);
        // none of this is a routing change: routing watchers are not woken by hints
        assertThat(s.view()).isSameAs(before);
    }

    @Test
    void limitsOnValueSizeCountAndTotalBytes() {
        ClusterState s = new ClusterState();
        ClusterState.Outcome big = s.apply(new MgmtdCommand.PutHint(0, 0, new byte[StoredHint.MAX_VALUE_BYTES + 1]));
        assertThat(big.status()).isEqualTo(Status.INVALID_ARGUMENT);
        assertThat(big.message()).contains(Integer.toString(StoredHint.MAX_VALUE_BYTES + 1));
        assertThat(s.apply(new MgmtdCommand.PutHint(0, 0, new byte[StoredHint.MAX_VALUE_BYTES])).status()).isEqualTo(Status.OK);
        ClusterState.Outcome bigReplace = s.apply(new MgmtdCommand.PutHint(1, 1, new byte[StoredHint.MAX_VALUE_BYTES + 1]));
        assertThat(bigReplace.status()).isEqualTo(Status.INVALID_ARGUMENT);
        assertThat(s.apply(new MgmtdCommand.DeleteHint(1, 0)).status()).isEqualTo(Status.OK);

        // at most MAX_HINTS hints (one shared value: the state does not copy it)
        byte[] one = {1};
        for (int i = 0; i < StoredHint.MAX_HINTS; i++) {
            assertThat(s.apply(new MgmtdCommand.PutHint(0, 0, one)).status()).isEqualTo(Status.OK);
        }
        ClusterState.Outcome full = s.apply(new MgmtdCommand.PutHint(0, 0, one));
        assertThat(full.status()).isEqualTo(Status.NO_SPACE);
        assertThat(full.message()).contains("65536 scheduler hints");
        assertThat(s.apply(new MgmtdCommand.PutHint(2, 1, json("{}"))).status()).as("replacing takes no new room").isEqualTo(Status.OK);
        assertThat(s.apply(new MgmtdCommand.DeleteHint(2, 0)).status()).isEqualTo(Status.OK);
        ClusterState.Outcome again = s.apply(new MgmtdCommand.PutHint(0, 0, one));
        assertThat(again.status()).isEqualTo(Status.OK);
        assertThat(again.value()).isEqualTo(StoredHint.MAX_HINTS + 2L);
        assertThat(all(s)).hasSize(StoredHint.MAX_HINTS);

        // at most MAX_TOTAL_BYTES of values: 256 full-size values fill it
        ClusterState t = new ClusterState();
        byte[] full256k = new byte[StoredHint.MAX_VALUE_BYTES];
        long fit = StoredHint.MAX_TOTAL_BYTES / StoredHint.MAX_VALUE_BYTES;
        for (int i = 0; i < fit; i++) {
            assertThat(t.apply(new MgmtdCommand.PutHint(0, 0, full256k)).status()).isEqualTo(Status.OK);
        }
        ClusterState.Outcome noRoom = t.apply(new MgmtdCommand.PutHint(0, 0, one));
        assertThat(noRoom.status()).isEqualTo(Status.NO_SPACE);
        assertThat(noRoom.message()).contains("no room");
        ByteBuf snap = Unpooled.buffer();
        try {
            t.encode(snap);
            ClusterState back = new ClusterState();
            back.decode(snap);
            assertThat(back.apply(new MgmtdCommand.PutHint(0, 0, one)).status()).as("the byte total is restored").isEqualTo(Status.NO_SPACE);
        } finally {
            snap.release();
        }
        assertThat(t.apply(new MgmtdCommand.PutHint(1, 1, one)).status()).as("a smaller value frees room").isEqualTo(Status.OK);
        assertThat(t.apply(new MgmtdCommand.PutHint(0, 0, one)).status()).isEqualTo(Status.OK);
    }

    @Test
    void pagesEndAtTheCountOrTheBytesButCarryAtLeastOneHint() {
        ClusterState s = new ClusterState();
        for (int i = 0; i < 5; i++) {
            s.apply(new MgmtdCommand.PutHint(0, 0, new byte[100]));
        }
        MgmtdMessage.Hints p1 = s.hints(0, 2, Long.MAX_VALUE);
        assertThat(p1.hints()).extracting(StoredHint::id).containsExactly(1L, 2L);
        assertThat(p1.more()).isTrue();
        MgmtdMessage.Hints p2 = s.hints(3, 10, 250);
        assertThat(p2.hints()).extracting(StoredHint::id).containsExactly(3L, 4L);
        assertThat(p2.more()).isTrue();
        MgmtdMessage.Hints p3 = s.hints(5, 10, 50);
        assertThat(p3.hints()).extracting(StoredHint::id).as("one hint even above the byte budget").containsExactly(5L);
        assertThat(p3.more()).isFalse();
        assertThat(s.hints(6, 10, 250)).isEqualTo(new MgmtdMessage.Hints(List.of(), false));
    }

    @Test
    void hintsAndTheNextIdSurviveASnapshot() {
        ClusterState s = new ClusterState();
        s.apply(new MgmtdCommand.Register(new NodeInfo(NodeId.of(1), "127.0.0.1", 9101, Map.of("rack", "r1")), NodeRole.STORAGE, 1,
                List.of(TargetId.of(101))));
        for (int i = 0; i < 3; i++) {
            s.apply(new MgmtdCommand.PutHint(0, 0, json("{\"n\":" + i + "}")));
        }
        s.apply(new MgmtdCommand.PutHint(2, 1, json("{\"n\":\"two\"}")));
        s.apply(new MgmtdCommand.DeleteHint(3, 0));
        ByteBuf snap = Unpooled.buffer();
        try {
            s.encode(snap);
            assertThat(snap.getInt(4)).as("snapshot format").isEqualTo(4);
            ClusterState back = new ClusterState();
            back.decode(snap);
            assertThat(back.view()).isEqualTo(s.view());
            assertThat(all(back)).isEqualTo(all(s)).containsExactly(new StoredHint(1, 1, json("{\"n\":0}")),
                    new StoredHint(2, 2, json("{\"n\":\"two\"}")));
            assertThat(back.apply(new MgmtdCommand.PutHint(0, 0, json("{}"))).value()).as("the deleted id 3 stays used").isEqualTo(4);
            assertThat(back.apply(new MgmtdCommand.PutHint(2, 2, json("{}"))).version()).isEqualTo(3);
        } finally {
            snap.release();
        }
    }

    @Test
    void aFormat2SnapshotLoadsWithNoHints() {
        ClusterState s = new ClusterState();
        s.apply(new MgmtdCommand.Register(new NodeInfo(NodeId.of(1), "127.0.0.1", 9101, Map.of()), NodeRole.STORAGE, 7,
                List.of(TargetId.of(101), TargetId.of(102))));
        ByteBuf snap = Unpooled.buffer();
        try {
            s.encode(snap);
            // format 2 is format 4 without its tail: the next hint id (u64), the hint count and the
            // revoked token count (u32 each, here 0)
            ByteBuf v2 = snap.slice(0, snap.readableBytes() - 16);
            v2.setInt(4, 2);
            ClusterState back = new ClusterState();
            back.decode(v2);
            assertThat(back.view()).isEqualTo(s.view());
            assertThat(all(back)).isEmpty();
            assertThat(back.apply(new MgmtdCommand.PutHint(0, 0, json("{}"))).value()).isEqualTo(1);
        } finally {
            snap.release();
        }
    }
}
