package io.strata.core.trace;

import java.util.HexFormat;
import java.util.concurrent.ThreadLocalRandom;
import java.util.function.Consumer;
import java.util.function.Supplier;

/**
 * The id of the user operation a thread is working for (a FUSE request, an API call), so that
 * every hop it causes (the client's calls, the storage node or meta service serving them, a
 * chain's forwards) can name it: the RPC layer sends the current id with each request
 * ({@code FLAG_TRACE}, see docs/internals/wire.md), and a server runs the handler under the id
 * it received. Code that continues an operation on another thread passes the id explicitly
 * ({@code IoOptions.trace()}) or opens it there again. 0 means none.
 */
public final class Trace {
    private static final ThreadLocal<long[]> CURRENT = ThreadLocal.withInitial(() -> new long[1]);
    /** Where notes about the current operation go (a served request's notes), or null. */
    private static final ThreadLocal<Consumer<Supplier<String>>> NOTES = new ThreadLocal<>();

    private Trace() {
    }

    /** The id this thread works for, 0 when none. */
    public static long current() {
        return CURRENT.get()[0];
    }

    /** A fresh id, never 0. */
    public static long newId() {
        long id;
        do {
            id = ThreadLocalRandom.current().nextLong();
        } while (id == 0);
        return id;
    }

    /** Makes {@code id} this thread's until the scope is closed (then the previous one again). */
    public static Scope open(long id) {
        return open(id, NOTES.get());
    }

    /**
     * As {@link #open(long)}, with {@code notes} taking what work done for the operation on this
     * thread has to say about its time ({@link #notes()}): a server opens each request so, and
     * its notes are shown with the request if it turns out slow. A note is a supplier, built only
     * then: most requests are not slow, and their notes are never read.
     */
    public static Scope open(long id, Consumer<Supplier<String>> notes) {
        long[] holder = CURRENT.get();
        long previous = holder[0];
        Consumer<Supplier<String>> previousNotes = NOTES.get();
        holder[0] = id;
        NOTES.set(notes);
        return new Scope(holder, previous, previousNotes, id);
    }

    /** Where notes about the current operation go; null when nothing takes them. */
    public static Consumer<Supplier<String>> notes() {
        return NOTES.get();
    }

    /** A new operation on this thread: {@link #open(long)} of a {@link #newId() fresh id}. */
    public static Scope begin() {
        return open(newId());
    }

    /** 16 lowercase hex digits, as logs and {@code strata admin slow} show an id. */
    public static String format(long id) {
        return HexFormat.of().toHexDigits(id);
    }

    /** Parses what {@link #format} wrote. */
    public static long parse(String s) {
        if (s.length() != 16) {
            throw new IllegalArgumentException("a trace id is 16 hex digits, got \"" + s + "\"");
        }
        return HexFormat.fromHexDigitsToLong(s);
    }

    /** An open trace id; closing restores the thread's previous one. */
    public static final class Scope implements AutoCloseable {
        private final long[] holder;
        private final long previous;
        private final Consumer<Supplier<String>> previousNotes;
        private final long id;

        private Scope(long[] holder, long previous, Consumer<Supplier<String>> previousNotes, long id) {
            this.holder = holder;
            this.previous = previous;
            this.previousNotes = previousNotes;
            this.id = id;
        }

        public long id() {
            return id;
        }

        @Override
        public void close() {
            holder[0] = previous;
            NOTES.set(previousNotes);
        }
    }
}
