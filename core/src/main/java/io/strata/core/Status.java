package io.strata.core;

import java.util.HashMap;
import java.util.Map;

/**
 * Wire status codes. Every {@link StrataException} carries one; every RPC error response
 * carries one. The numbers are part of the wire format (docs/internals/wire.md): never reuse or
 * renumber one, only add. Ranges: 1-99 general and RPC, 100-199 namespace (errno-like),
 * 200-299 storage, 300-399 cluster management.
 */
public enum Status {
    OK(0, false, 0),

    // general and RPC
    INTERNAL(1, false, Errno.EIO),
    INVALID_ARGUMENT(2, false, Errno.EINVAL),
    TIMEOUT(3, true, Errno.ETIMEDOUT),
    CONNECTION_LOST(4, true, Errno.EIO),
    CONNECTION_FAILED(5, true, Errno.EIO),
    OVERLOADED(6, true, Errno.EAGAIN),
    BAD_FRAME(7, false, Errno.EIO),
    UNKNOWN_MESSAGE(8, false, Errno.ENOSYS),
    SHUTTING_DOWN(9, true, Errno.EIO),
    CANCELLED(10, false, Errno.ECANCELED),
    UNSUPPORTED(11, false, Errno.ENOTSUP),
    CONFIG_INVALID(12, false, Errno.EINVAL),
    /**
     * The connection did not prove who it is: no {@code Authenticate} first, or a token that is
     * malformed, signed by another key or expired. The server closes the connection after it.
     */
    UNAUTHENTICATED(13, false, Errno.EACCES),

    // namespace, errno-like
    NOT_FOUND(100, false, Errno.ENOENT),
    ALREADY_EXISTS(101, false, Errno.EEXIST),
    NOT_A_DIRECTORY(102, false, Errno.ENOTDIR),
    IS_A_DIRECTORY(103, false, Errno.EISDIR),
    DIRECTORY_NOT_EMPTY(104, false, Errno.ENOTEMPTY),
    /** Not allowed: a file's mode, or (RPC) a caller whose role or subject may not send this message. */
    PERMISSION_DENIED(105, false, Errno.EACCES),
    NOT_PERMITTED(106, false, Errno.EPERM),
    NAME_TOO_LONG(107, false, Errno.ENAMETOOLONG),
    INVALID_NAME(108, false, Errno.EINVAL),
    CROSS_DEVICE(109, false, Errno.EXDEV),
    TOO_MANY_LINKS(110, false, Errno.EMLINK),
    SYMLINK_LOOP(111, false, Errno.ELOOP),
    NO_SUCH_ATTRIBUTE(112, false, Errno.ENODATA),
    TXN_CONFLICT(113, true, Errno.EAGAIN),
    TXN_MAYBE_COMMITTED(114, true, Errno.EIO),
    STALE_HANDLE(115, false, Errno.ESTALE),
    FILE_TOO_LARGE(116, false, Errno.EFBIG),
    READ_ONLY(117, false, Errno.EROFS),
    /** A file is open for writing where the operation needs it closed (a checkpoint commit). */
    FILE_BUSY(118, false, Errno.EBUSY),

    // storage
    STALE_CHAIN_VERSION(200, true, Errno.EIO),
    NOT_SERVING(201, true, Errno.EIO),
    CHECKSUM_MISMATCH(202, false, Errno.EIO),
    CHUNK_CORRUPT(203, false, Errno.EIO),
    OFFSET_OUT_OF_RANGE(204, false, Errno.EINVAL),
    CHUNK_ID_OUT_OF_RANGE(205, false, Errno.EINVAL),
    NO_SPACE(206, false, Errno.ENOSPC),
    IO_ERROR(207, false, Errno.EIO),
    CHUNK_BUSY(208, true, Errno.EAGAIN),
    NO_SUCH_TARGET(209, true, Errno.EIO),
    NO_SUCH_CHAIN(210, true, Errno.EIO),
    /** Every copy of bytes that were acknowledged but not yet durable below is gone (an L2 file whose both copies were lost). */
    DATA_LOST(211, false, Errno.EIO),
    /**
     * Fewer writable replicas than the write's minimum ({@code replicas.min-ack}) hold it: the
     * write is not acknowledged (it may or may not become visible); retried until the chain has
     * enough replicas again or the caller's time runs out.
     */
    TOO_FEW_REPLICAS(212, true, Errno.EIO),

    // cluster management
    NOT_LEADER(300, true, Errno.EAGAIN),
    FENCED(301, true, Errno.EIO),
    LEASE_EXPIRED(302, true, Errno.EIO),
    UNKNOWN_NODE(303, false, Errno.EINVAL);

    private static final Map<Integer, Status> BY_CODE = new HashMap<>();

    static {
        for (Status s : values()) {
            if (BY_CODE.put(s.code, s) != null) {
                throw new ExceptionInInitializerError("duplicate status code " + s.code);
            }
        }
    }

    private final int code;
    private final boolean retryable;
    private final int errno;

    Status(int code, boolean retryable, int errno) {
        this.code = code;
        this.retryable = retryable;
        this.errno = errno;
    }

    /** The code on the wire (an unsigned 16-bit value). */
    public int code() {
        return code;
    }

    /** Whether the same request may succeed if retried (possibly elsewhere, after a refresh). */
    public boolean retryable() {
        return retryable;
    }

    /** The POSIX errno a file system front end (FUSE) reports for this status. */
    public int errno() {
        return errno;
    }

    /** The status for a wire code; unknown codes (a newer peer) map to {@link #INTERNAL}. */
    public static Status fromCode(int code) {
        Status s = BY_CODE.get(code);
        return s == null ? INTERNAL : s;
    }

    /** Linux errno values (x86_64), for the statuses above. */
    public static final class Errno {
        public static final int EPERM = 1;
        public static final int ENOENT = 2;
        public static final int EIO = 5;
        public static final int EAGAIN = 11;
        public static final int EACCES = 13;
        public static final int EBUSY = 16;
        public static final int EEXIST = 17;
        public static final int EXDEV = 18;
        public static final int ENOTDIR = 20;
        public static final int EISDIR = 21;
        public static final int EINVAL = 22;
        public static final int EFBIG = 27;
        public static final int ENOSPC = 28;
        public static final int EROFS = 30;
        public static final int EMLINK = 31;
        public static final int ENAMETOOLONG = 36;
        public static final int ENOSYS = 38;
        public static final int ENOTEMPTY = 39;
        public static final int ELOOP = 40;
        public static final int ENODATA = 61;
        public static final int ENOTSUP = 95;
        public static final int ETIMEDOUT = 110;
        public static final int ESTALE = 116;
        public static final int ECANCELED = 125;

        private Errno() {
        }
    }
}
