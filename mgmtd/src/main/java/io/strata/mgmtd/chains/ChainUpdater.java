package io.strata.mgmtd.chains;

import io.strata.protocol.routing.LocalState;
import io.strata.core.TargetId;
import io.strata.protocol.routing.ChainInfo;
import io.strata.protocol.routing.TargetState;
import io.strata.mgmtd.chains.TargetTransitions.Pred;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;

/**
 * Applies {@link TargetTransitions} to a whole chain. One pass computes every target's next
 * state from the states of the previous pass (each target sees its predecessor's state as it
 * was), then reorders the chain: serving targets first, then lastsrv, syncing, waiting, and
 * offline last, keeping the relative order within a state (so a target that goes offline moves
 * to the tail, and the write path stays the writable prefix). Passes repeat until nothing
 * changes (at most a handful; a table that did not converge would be a bug and throws).
 */
public final class ChainUpdater {
    static final int MAX_PASSES = 16;

    private ChainUpdater() {
    }

    /** A chain after the update: its targets in order, their public states, and whether anything changed. */
    public record Result(ChainInfo chain, Map<TargetId, TargetState> states, boolean changed) {
    }

    /**
     * Updates {@code chain}. {@code states} gives every member's current public state and
     * {@code local} its local state. The chain version grows by one when the order or any
     * state changed.
     */
    public static Result update(ChainInfo chain, Map<TargetId, TargetState> states, Function<TargetId, LocalState> local) {
        List<TargetId> order = new ArrayList<>(chain.targets());
        Map<TargetId, TargetState> cur = new HashMap<>();
        for (TargetId t : order) {
            TargetState s = states.get(t);
            if (s == null) {
                throw new IllegalArgumentException(chain.id() + ": no public state for " + t);
            }
            cur.put(t, s);
        }
        Map<TargetId, TargetState> start = Map.copyOf(cur);
        Map<TargetId, LocalState> eff = new HashMap<>();
        for (TargetId t : order) {
            eff.put(t, effective(local.apply(t), start.get(t)));
        }
        boolean converged = false;
        for (int pass = 0; pass < MAX_PASSES; pass++) {
            Map<TargetId, TargetState> next = new HashMap<>();
            for (int i = 0; i < order.size(); i++) {
                TargetId t = order.get(i);
                Pred pred = i == 0 ? Pred.NONE : Pred.of(cur.get(order.get(i - 1)));
                next.put(t, TargetTransitions.next(eff.get(t), cur.get(t), pred));
            }
            List<TargetId> sorted = new ArrayList<>(order);
            sorted.sort(Comparator.comparingInt(t -> rank(next.get(t))));
            if (next.equals(cur) && sorted.equals(order)) {
                converged = true;
                break;
            }
            cur = next;
            order = sorted;
        }
        if (!converged) {
            throw new IllegalStateException(chain.id() + ": target states did not settle after " + MAX_PASSES + " passes");
        }
        boolean changed = !order.equals(chain.targets()) || !cur.equals(start);
        ChainInfo out = changed ? new ChainInfo(chain.id(), chain.version() + 1, order) : chain;
        return new Result(out, Map.copyOf(cur), changed);
    }

    /**
     * An up-to-date report counts only for a target that is serving or already syncing when the
     * update starts: it means "the resync I was in finished". A target that only reaches
     * syncing during this update must sync first, whatever it reported before.
     */
    public static LocalState effective(LocalState reported, TargetState current) {
        if (reported == LocalState.UP_TO_DATE && current != TargetState.SERVING && current != TargetState.SYNCING) {
            return LocalState.ONLINE;
        }
        return reported;
    }

    /**
     * The local state the manager keeps after an update: an up-to-date report is consumed by
     * the update (kept only for a target that now serves), so that a later resync needs a new
     * report.
     */
    public static LocalState settled(LocalState reported, TargetState after) {
        return reported == LocalState.UP_TO_DATE && after != TargetState.SERVING ? LocalState.ONLINE : reported;
    }

    /** Position class in a chain: writable targets first, then lastsrv (which blocks waiting ones), then the rest. */
    public static int rank(TargetState s) {
        return switch (s) {
            case SERVING -> 0;
            case LASTSRV -> 1;
            case SYNCING -> 2;
            case WAITING -> 3;
            case OFFLINE -> 4;
        };
    }
}
