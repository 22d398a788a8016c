package io.strata.harness;

import io.strata.harness.History.Op;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;

/**
 * A linearizability checker for registers, in the style of Knossos and Porcupine (the
 * Wing-Gong search with Lowe's memoisation): it looks for an order of the operations that
 * respects real time (an operation that completed before another was invoked comes first) in
 * which every read returns the last value written before it. Keys are independent registers
 * and are checked one by one; the register's initial value is {@code initial} (0 = empty chunk).
 *
 * <p>The search walks the history's events in time order and tries to linearize each pending
 * call; when it reaches the completion of an operation it has not placed, it backtracks. A set
 * of (placed operations, register value) pairs already explored prunes repeated states, which
 * keeps realistic histories (a handful of concurrent clients) fast. Writes with an unknown outcome
 * complete at "never", so they may be placed anywhere after their invocation, or not at all.
 */
public final class Linearizability {
    private Linearizability() {
    }

    /** The outcome for one key: linearizable, or the operations involved where the search got stuck. */
    public record Result(String key, boolean ok, int operations, String explanation) {
    }

    /** Checks every key; returns the first failure, or an ok result. */
    public static Result check(History h, long initial) {
        Result last = new Result("", true, 0, "empty history");
        for (Map.Entry<String, List<Op>> e : h.byKey().entrySet()) {
            Result r = checkKey(e.getKey(), e.getValue(), initial);
            if (!r.ok()) {
                return r;
            }
            last = new Result("all keys", true, last.operations() + r.operations(), "linearizable");
        }
        return last;
    }

    /** Event list node: a call or a return of one operation. */
    private static final class Event {
        final Op op;
        final boolean call;
        final int index;
        Event match;
        Event prev;
        Event next;

        Event(Op op, boolean call, int index) {
            this.op = op;
            this.call = call;
            this.index = index;
        }
    }

    private record Memo(BitSet placed, long value) {
        @Override
        public boolean equals(Object o) {
            return o instanceof Memo m && m.value == value && m.placed.equals(placed);
        }

        @Override
        public int hashCode() {
            return Objects.hash(placed, value);
        }
    }

    public static Result checkKey(String key, List<Op> ops, long initial) {
        int n = ops.size();
        List<Event> events = new ArrayList<>(2 * n);
        for (int i = 0; i < n; i++) {
            Op op = ops.get(i);
            Event c = new Event(op, true, i);
            Event r = new Event(op, false, i);
            c.match = r;
            r.match = c;
            events.add(c);
            events.add(r);
        }
        // time order; at equal times calls first (touching intervals count as concurrent)
        events.sort((a, b) -> {
            long ta = a.call ? a.op.invoked() : a.op.completed();
            long tb = b.call ? b.op.invoked() : b.op.completed();
            if (ta != tb) {
                return Long.compare(ta, tb);
            }
            return Boolean.compare(!a.call, !b.call);
        });
        Event head = new Event(null, false, -1);
        Event prev = head;
        for (Event e : events) {
            prev.next = e;
            e.prev = prev;
            prev = e;
        }
        BitSet placed = new BitSet(n);
        Set<Memo> seen = new HashSet<>();
        record Frame(Event call, long value) {
        }
        List<Frame> stack = new ArrayList<>();
        long value = initial;
        Event entry = head.next;
        int deepest = 0;
        String stuck = "";
        while (head.next != null) {
            if (entry == null) {
                // only unknown writes left, never completed: leaving them out is allowed
                break;
            }
            if (entry.call) {
                Op op = entry.op;
                boolean legal = op.write() || op.value() == value;
                long next = op.write() ? op.value() : value;
                boolean fresh = false;
                if (legal) {
                    BitSet p = (BitSet) placed.clone();
                    p.set(entry.index);
                    fresh = seen.add(new Memo(p, next));
                }
                if (legal && fresh) {
                    stack.add(new Frame(entry, value));
                    placed.set(entry.index);
                    value = next;
                    lift(entry);
                    entry = head.next;
                    if (stack.size() > deepest) {
                        deepest = stack.size();
                    }
                } else {
                    entry = entry.next;
                }
            } else {
                if (entry.op.completed() == Op.NEVER) {
                    break; // the rest are unknown writes that may never happen
                }
                if (stack.isEmpty()) {
                    return new Result(key, false, n, "no linearization: " + describe(entry.op, ops, value) + stuck);
                }
                if (stack.size() >= deepest) {
                    stuck = "; deepest prefix placed " + stack.size() + " of " + n + " operations, register then " + value
                            + ", blocked at " + entry.op;
                }
                Frame f = stack.remove(stack.size() - 1);
                placed.clear(f.call.index);
                value = f.value;
                unlift(f.call);
                entry = f.call.next;
            }
        }
        return new Result(key, true, n, "linearizable");
    }

    private static String describe(Op blocked, List<Op> ops, long value) {
        return "operation " + blocked + " cannot be placed (key has " + ops.size() + " operations)";
    }

    private static void lift(Event call) {
        call.prev.next = call.next;
        if (call.next != null) {
            call.next.prev = call.prev;
        }
        Event r = call.match;
        r.prev.next = r.next;
        if (r.next != null) {
            r.next.prev = r.prev;
        }
    }

    private static void unlift(Event call) {
        Event r = call.match;
        r.prev.next = r;
        if (r.next != null) {
            r.next.prev = r;
        }
        call.prev.next = call;
        if (call.next != null) {
            call.next.prev = call;
        }
    }
}
