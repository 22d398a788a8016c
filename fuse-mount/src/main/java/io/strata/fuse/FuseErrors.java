package io.strata.fuse;

import io.strata.core.Status;
import io.strata.core.StrataException;

/**
 * Strata statuses as the errno a FUSE reply carries ({@link Status#errno()}), negated as libfuse
 * wants. One exception: TIMEOUT is reported as EIO (read(2), write(2), close(2) callers do not
 * expect ETIMEDOUT): a request that could not be served within the mount's timeout fails with
 * EIO instead of hanging the process.
 */
final class FuseErrors {
    static final int ERANGE = 34;
    static final int EBADF = 9;

    private FuseErrors() {
    }

    static int errno(Throwable t) {
        Throwable c = StrataException.unwrapCompletion(t);
        if (c instanceof StrataException se) {
            if (se.status() == Status.TIMEOUT) {
                return -Status.Errno.EIO;
            }
            return -se.status().errno();
        }
        StrataException w = StrataException.wrap(c);
        return w.status() == Status.TIMEOUT ? -Status.Errno.EIO : -w.status().errno();
    }
}
