package io.strata.core;

import io.netty.buffer.ByteBuf;
import io.strata.core.rpc.Wire;

/**
 * The root of every error Strata reports. It carries a wire {@link Status}, so an error raised
 * on a storage node reaches the client (and a FUSE caller's errno) unchanged. Cases where the
 * caller must act differently are subclasses carrying what it needs: {@link StaleRouting} (the
 * newer chain version), {@link NotLeader} (the leader's address).
 *
 * <p>A subclass that carries extra fields writes them in {@link #encodeDetail} and is rebuilt
 * by {@link #fromWire}; the detail bytes follow the message in an error frame.
 */
public class StrataException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    private final Status status;

    public StrataException(Status status, String message) {
        super(message);
        this.status = status;
    }

    public StrataException(Status status, String message, Throwable cause) {
        super(message, cause);
        this.status = status;
    }

    public Status status() {
        return status;
    }

    public boolean retryable() {
        return status.retryable();
    }

    /** Writes subclass-specific fields; the base class has none. */
    public void encodeDetail(ByteBuf out) {
    }

    @Override
    public String toString() {
        return status + ": " + getMessage();
    }

    /** Rebuilds the exception a peer sent: {@code detail} is borrowed and read, not released. */
    public static StrataException fromWire(Status status, String message, ByteBuf detail) {
        return switch (status) {
            case STALE_CHAIN_VERSION -> new StaleRouting(message, detail.readableBytes() >= 8 ? detail.readLong() : -1);
            case NOT_LEADER -> new NotLeader(message, detail.isReadable() ? Wire.readString(detail, 1024) : "");
            default -> new StrataException(status, message);
        };
    }

    /** Wraps any throwable into a StrataException, keeping one that already is. */
    public static StrataException wrap(Throwable t) {
        Throwable c = unwrapCompletion(t);
        if (c instanceof StrataException se) {
            return se;
        }
        if (c instanceof java.util.concurrent.TimeoutException) {
            return new StrataException(Status.TIMEOUT, "timed out", c);
        }
        if (c instanceof java.util.concurrent.CancellationException) {
            return new StrataException(Status.CANCELLED, "cancelled", c);
        }
        if (c instanceof java.nio.file.NoSuchFileException) {
            return new StrataException(Status.NOT_FOUND, String.valueOf(c.getMessage()), c);
        }
        if (c instanceof java.io.IOException) {
            String m = String.valueOf(c.getMessage());
            Status s = m.contains("No space left") ? Status.NO_SPACE : Status.IO_ERROR;
            return new StrataException(s, m, c);
        }
        return new StrataException(Status.INTERNAL, c.getClass().getSimpleName() + ": " + c.getMessage(), c);
    }

    /** Strips CompletionException/ExecutionException wrappers. */
    public static Throwable unwrapCompletion(Throwable t) {
        Throwable c = t;
        while ((c instanceof java.util.concurrent.CompletionException
                || c instanceof java.util.concurrent.ExecutionException) && c.getCause() != null) {
            c = c.getCause();
        }
        return c;
    }

    /** The caller used a chain version older than the node's; refresh routing and retry. */
    public static final class StaleRouting extends StrataException {
        private static final long serialVersionUID = 1L;
        private final long currentVersion;

        public StaleRouting(String message, long currentVersion) {
            super(Status.STALE_CHAIN_VERSION, message);
            this.currentVersion = currentVersion;
        }

        /** The version the rejecting node holds, or -1 when unknown. */
        public long currentVersion() {
            return currentVersion;
        }

        @Override
        public void encodeDetail(ByteBuf out) {
            out.writeLong(currentVersion);
        }
    }

    /** The request reached a follower; retry at {@link #leader()} (empty when unknown). */
    public static final class NotLeader extends StrataException {
        private static final long serialVersionUID = 1L;
        private final String leader;

        public NotLeader(String message, String leader) {
            super(Status.NOT_LEADER, message);
            this.leader = leader;
        }

        public String leader() {
            return leader;
        }

        @Override
        public void encodeDetail(ByteBuf out) {
            Wire.writeString(out, leader);
        }
    }
}
