package io.strata.harness;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A concurrent history of register operations (reads and writes of a value per key), recorded
 * by several clients: each operation's invocation and completion time. A write whose outcome is
 * unknown (it failed or timed out: it may still take effect) is recorded as {@link #unknown};
 * a failed read is forgotten (it returned nothing). Feed it to {@link Linearizability#check}.
 */
public final class History {
    /** One operation: a write of {@code value} or a read that returned {@code value}; times in ns. */
    public record Op(int id, int client, String key, boolean write, long value, long invoked, long completed) {
        public static final long NEVER = Long.MAX_VALUE;

        @Override
        public String toString() {
            return "#" + id + " c" + client + " " + (write ? "W(" : "R(") + value + ") [" + invoked + ", "
                    + (completed == NEVER ? "?" : String.valueOf(completed)) + "]";
        }
    }

    private final AtomicInteger ids = new AtomicInteger();
    private final List<Op> ops = new ArrayList<>();
    private final long origin = System.nanoTime();

    private long now() {
        return System.nanoTime() - origin;
    }

    /** A started operation; finish it with exactly one of its methods. */
    public final class Pending {
        private final int id = ids.incrementAndGet();
        private final int client;
        private final String key;
        private final boolean write;
        private final long value;
        private final long invoked = now();

        private Pending(int client, String key, boolean write, long value) {
            this.client = client;
            this.key = key;
            this.write = write;
            this.value = value;
        }

        /** The write completed, or the read returned {@code readValue} (ignored for writes). */
        public void ok(long readValue) {
            add(new Op(id, client, key, write, write ? value : readValue, invoked, now()));
        }

        /** The write's outcome is unknown: it may take effect at any time after its invocation. */
        public void unknown() {
            if (write) {
                add(new Op(id, client, key, true, value, invoked, Op.NEVER));
            }
        }
    }

    public Pending write(int client, String key, long value) {
        return new Pending(client, key, true, value);
    }

    public Pending read(int client, String key) {
        return new Pending(client, key, false, 0);
    }

    /** Adds a finished operation (tests that build histories by hand). */
    public synchronized void add(Op op) {
        ops.add(op);
    }

    public synchronized List<Op> ops() {
        return List.copyOf(ops);
    }

    /** The operations per key: each key is an independent register. */
    public synchronized Map<String, List<Op>> byKey() {
        Map<String, List<Op>> out = new TreeMap<>();
        for (Op op : ops) {
            out.computeIfAbsent(op.key(), k -> new ArrayList<>()).add(op);
        }
        return out;
    }
}
