package io.strata.mgmtd.chains;

import io.strata.protocol.routing.LocalState;
import static org.assertj.core.api.Assertions.assertThat;

import io.strata.core.ChainId;
import io.strata.core.TargetId;
import io.strata.protocol.routing.ChainInfo;
import io.strata.protocol.routing.TargetState;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Every chain of 1..4 targets in every (local, public) combination, checked against the invariants of docs/internals/target-states.md. */
class ChainUpdaterTest {
    @Test
    void exhaustiveOverEveryChainUpToFourTargets() {
        long checked = 0;
        for (int n = 1; n <= 4; n++) {
            int combos = (int) Math.pow(15, n);
            for (int code = 0; code < combos; code++) {
                check(n, code);
                checked++;
            }
        }
        assertThat(checked).isEqualTo(15 + 225 + 3375 + 50625);
    }

    private static void check(int n, int code) {
        List<TargetId> ids = new ArrayList<>();
        Map<TargetId, TargetState> pub = new HashMap<>();
        Map<TargetId, LocalState> local = new HashMap<>();
        int c = code;
        for (int i = 0; i < n; i++) {
            TargetId t = TargetId.of(i + 1);
            ids.add(t);
            pub.put(t, TargetState.values()[c % 5]);
            local.put(t, LocalState.values()[(c / 5) % 3]);
            c /= 15;
        }
        ChainInfo before = new ChainInfo(ChainId.of(1), 5, ids);
        String what = "chain " + describe(ids, pub, local);
        ChainUpdater.Result r = ChainUpdater.update(before, pub, local::get);
        List<TargetId> order = r.chain().targets();
        Map<TargetId, TargetState> after = r.states();

        // 2. a complete copy is never lost, and no non-holder becomes one
        List<TargetId> holdersBefore = ids.stream().filter(t -> pub.get(t) == TargetState.SERVING || pub.get(t) == TargetState.LASTSRV
                || pub.get(t) == TargetState.SYNCING && local.get(t) == LocalState.UP_TO_DATE).toList();
        List<TargetId> holdersAfter = order.stream().filter(t -> after.get(t) == TargetState.SERVING
                || after.get(t) == TargetState.LASTSRV).toList();
        if (!holdersBefore.isEmpty()) {
            assertThat(holdersAfter).as(what).isNotEmpty();
        }
        assertThat(holdersBefore).as(what).containsAll(holdersAfter);
        // 3. one lastsrv at most, never next to a serving target
        long lastsrv = count(after, TargetState.LASTSRV);
        assertThat(lastsrv).as(what).isLessThanOrEqualTo(1);
        if (lastsrv == 1) {
            assertThat(count(after, TargetState.SERVING)).as(what).isZero();
        }
        // 4. at most one syncing target, right behind a serving one
        assertThat(count(after, TargetState.SYNCING)).as(what).isLessThanOrEqualTo(1);
        for (int i = 0; i < order.size(); i++) {
            if (after.get(order.get(i)) == TargetState.SYNCING) {
                assertThat(i).as(what).isPositive();
                assertThat(after.get(order.get(i - 1))).as(what).isEqualTo(TargetState.SERVING);
            }
        }
        // 5. ordered, so the write path is a prefix
        for (int i = 1; i < order.size(); i++) {
            assertThat(ChainUpdater.rank(after.get(order.get(i - 1)))).as(what)
                    .isLessThanOrEqualTo(ChainUpdater.rank(after.get(order.get(i))));
        }
        for (TargetId t : ids) {
            // 6. down means offline or lastsrv, alive means neither
            if (local.get(t) == LocalState.OFFLINE) {
                assertThat(after.get(t)).as(what).isIn(TargetState.OFFLINE, TargetState.LASTSRV);
            } else {
                assertThat(after.get(t)).as(what).isNotIn(TargetState.OFFLINE, TargetState.LASTSRV);
            }
            // 7. online-only targets serve only if they served or held the last copy
            if (local.get(t) == LocalState.ONLINE && after.get(t) == TargetState.SERVING) {
                assertThat(pub.get(t)).as(what).isIn(TargetState.SERVING, TargetState.LASTSRV);
            }
        }
        // 8. version bumps exactly on change; the result is a fixed point
        boolean changed = !order.equals(ids) || !after.equals(pub);
        assertThat(r.changed()).as(what).isEqualTo(changed);
        assertThat(r.chain().version()).as(what).isEqualTo(changed ? 6 : 5);
        ChainUpdater.Result again = ChainUpdater.update(r.chain(), after, t -> ChainUpdater.settled(local.get(t), after.get(t)));
        assertThat(again.changed()).as(what).isFalse();
    }

    private static long count(Map<TargetId, TargetState> m, TargetState s) {
        return m.values().stream().filter(x -> x == s).count();
    }

    private static String describe(List<TargetId> ids, Map<TargetId, TargetState> pub, Map<TargetId, LocalState> local) {
        StringBuilder sb = new StringBuilder("[");
        for (TargetId t : ids) {
            sb.append(t).append('=').append(pub.get(t).publicName()).append('/').append(local.get(t).publicName()).append(' ');
        }
        return sb.append(']').toString();
    }

    @Test
    void anOfflineTargetMovesToTheTailAndReturnsThroughSyncing() {
        TargetId a = TargetId.of(1);
        TargetId b = TargetId.of(2);
        TargetId c = TargetId.of(3);
        Map<TargetId, TargetState> pub = new HashMap<>(Map.of(a, TargetState.SERVING, b, TargetState.SERVING, c, TargetState.SERVING));
        Map<TargetId, LocalState> local = new HashMap<>(Map.of(a, LocalState.UP_TO_DATE, b, LocalState.OFFLINE, c, LocalState.UP_TO_DATE));
        ChainUpdater.Result r = ChainUpdater.update(new ChainInfo(ChainId.of(1), 7, List.of(a, b, c)), pub, local::get);
        assertThat(r.chain().targets()).containsExactly(a, c, b);
        assertThat(r.chain().version()).isEqualTo(8);
        assertThat(r.states()).containsEntry(b, TargetState.OFFLINE);

        local.put(b, LocalState.ONLINE);
        r = ChainUpdater.update(r.chain(), r.states(), local::get);
        assertThat(r.states()).containsEntry(b, TargetState.SYNCING);
        assertThat(r.chain().version()).isEqualTo(9);
        r = ChainUpdater.update(r.chain(), r.states(), local::get);
        assertThat(r.changed()).isFalse();

        local.put(b, LocalState.UP_TO_DATE);
        r = ChainUpdater.update(r.chain(), r.states(), local::get);
        assertThat(r.states()).containsEntry(b, TargetState.SERVING);
        assertThat(r.chain().version()).isEqualTo(10);
    }

    @Test
    void theLastServingTargetBecomesLastsrvAndBlocksPromotionUntilItReturns() {
        TargetId a = TargetId.of(1);
        TargetId b = TargetId.of(2);
        Map<TargetId, TargetState> pub = new HashMap<>(Map.of(a, TargetState.SERVING, b, TargetState.OFFLINE));
        Map<TargetId, LocalState> local = new HashMap<>(Map.of(a, LocalState.OFFLINE, b, LocalState.ONLINE));
        ChainUpdater.Result r = ChainUpdater.update(new ChainInfo(ChainId.of(1), 1, List.of(a, b)), pub, local::get);
        assertThat(r.states()).containsEntry(a, TargetState.LASTSRV).containsEntry(b, TargetState.WAITING);
        local.put(b, LocalState.UP_TO_DATE); // a stale up-to-date report changes nothing
        assertThat(ChainUpdater.update(r.chain(), r.states(), local::get).changed()).isFalse();
        local.put(a, LocalState.ONLINE);
        r = ChainUpdater.update(r.chain(), r.states(), local::get);
        assertThat(r.states()).containsEntry(a, TargetState.SERVING).containsEntry(b, TargetState.SYNCING);
        assertThat(r.chain().targets()).containsExactly(a, b);
    }
}
