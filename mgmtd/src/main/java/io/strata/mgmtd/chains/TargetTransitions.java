package io.strata.mgmtd.chains;

import io.strata.protocol.routing.LocalState;
import io.strata.protocol.routing.TargetState;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;

/**
 * THE transition table of public target states (docs/internals/target-states.md holds the same
 * table, and a test checks that the two agree). A target's next public state is a function of
 * its {@link LocalState}, its current public state and the public state of its predecessor in
 * the chain ({@link Pred#NONE} for the head). {@link ChainUpdater} applies it to whole chains.
 *
 * <p>The rules keep three promises: (1) a target becomes serving only from serving, from
 * lastsrv (it was the last holder of every acknowledged write) or from syncing after it
 * reported up-to-date; (2) when the last serving target goes down it becomes lastsrv, never
 * plain offline, so nothing newer can be promoted over it; (3) only the target right behind the
 * serving prefix syncs, and it syncs from that predecessor.
 */
public final class TargetTransitions {
    /** The predecessor's public state, or none (the target is the chain's head). */
    public enum Pred {
        NONE, SERVING, SYNCING, WAITING, LASTSRV, OFFLINE;

        public static Pred of(TargetState s) {
            return s == null ? NONE : valueOf(s.name());
        }

        public String publicName() {
            return name().toLowerCase(Locale.ROOT);
        }
    }

    /** One row: the sets it matches and the next state. */
    public record Row(Set<LocalState> local, Set<TargetState> current, Set<Pred> pred, TargetState next) {
        public Row {
            local = Set.copyOf(local);
            current = Set.copyOf(current);
            pred = Set.copyOf(pred);
        }

        boolean matches(LocalState l, TargetState c, Pred p) {
            return local.contains(l) && current.contains(c) && pred.contains(p);
        }
    }

    private static final Set<LocalState> ALIVE = EnumSet.of(LocalState.UP_TO_DATE, LocalState.ONLINE);
    private static final Set<Pred> ANY = EnumSet.allOf(Pred.class);
    private static final Set<Pred> NOT_SERVING = EnumSet.complementOf(EnumSet.of(Pred.SERVING));

    private static final List<Row> ROWS = List.of(
            // alive targets
            new Row(ALIVE, EnumSet.of(TargetState.SERVING), ANY, TargetState.SERVING),
            new Row(EnumSet.of(LocalState.UP_TO_DATE), EnumSet.of(TargetState.SYNCING), ANY, TargetState.SERVING),
            new Row(EnumSet.of(LocalState.ONLINE), EnumSet.of(TargetState.SYNCING), EnumSet.of(Pred.SERVING), TargetState.SYNCING),
            new Row(EnumSet.of(LocalState.ONLINE), EnumSet.of(TargetState.SYNCING), NOT_SERVING, TargetState.WAITING),
            new Row(ALIVE, EnumSet.of(TargetState.WAITING), EnumSet.of(Pred.SERVING), TargetState.SYNCING),
            new Row(ALIVE, EnumSet.of(TargetState.WAITING), NOT_SERVING, TargetState.WAITING),
            new Row(ALIVE, EnumSet.of(TargetState.LASTSRV), EnumSet.of(Pred.SERVING), TargetState.WAITING),
            new Row(ALIVE, EnumSet.of(TargetState.LASTSRV), NOT_SERVING, TargetState.SERVING),
            new Row(ALIVE, EnumSet.of(TargetState.OFFLINE), ANY, TargetState.WAITING),
            // targets that are down
            new Row(EnumSet.of(LocalState.OFFLINE), EnumSet.of(TargetState.SERVING), EnumSet.of(Pred.SERVING), TargetState.OFFLINE),
            new Row(EnumSet.of(LocalState.OFFLINE), EnumSet.of(TargetState.SERVING), NOT_SERVING, TargetState.LASTSRV),
            new Row(EnumSet.of(LocalState.OFFLINE), EnumSet.of(TargetState.SYNCING, TargetState.WAITING, TargetState.OFFLINE), ANY,
                    TargetState.OFFLINE),
            new Row(EnumSet.of(LocalState.OFFLINE), EnumSet.of(TargetState.LASTSRV), EnumSet.of(Pred.SERVING, Pred.LASTSRV),
                    TargetState.OFFLINE),
            new Row(EnumSet.of(LocalState.OFFLINE), EnumSet.of(TargetState.LASTSRV),
                    EnumSet.of(Pred.NONE, Pred.SYNCING, Pred.WAITING, Pred.OFFLINE), TargetState.LASTSRV));

    private static final TargetState[][][] TABLE = build();

    private TargetTransitions() {
    }

    /** The rows, in the order the docs list them. */
    public static List<Row> rows() {
        return ROWS;
    }

    /** The next public state. */
    public static TargetState next(LocalState local, TargetState current, Pred pred) {
        return TABLE[local.ordinal()][current.ordinal()][pred.ordinal()];
    }

    /** Every combination is matched by exactly one row; checked once at class load. */
    private static TargetState[][][] build() {
        TargetState[][][] t = new TargetState[LocalState.values().length][TargetState.values().length][Pred.values().length];
        for (LocalState l : LocalState.values()) {
            for (TargetState c : TargetState.values()) {
                for (Pred p : Pred.values()) {
                    List<Row> hits = new ArrayList<>();
                    for (Row r : ROWS) {
                        if (r.matches(l, c, p)) {
                            hits.add(r);
                        }
                    }
                    if (hits.size() != 1) {
                        throw new ExceptionInInitializerError("transition table: (" + l + ", " + c + ", " + p + ") matches "
                                + hits.size() + " rows");
                    }
                    t[l.ordinal()][c.ordinal()][p.ordinal()] = hits.get(0).next();
                }
            }
        }
        return t;
    }
}
