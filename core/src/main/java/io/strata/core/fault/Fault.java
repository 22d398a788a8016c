package io.strata.core.fault;

import io.strata.core.StrataException;
import java.time.Duration;

/** What an armed fault point does when it triggers. */
public sealed interface Fault {
    /** The message is silently not sent. */
    record Drop() implements Fault {
    }

    /** The message is sent after a delay. */
    record Delay(Duration delay) implements Fault {
    }

    /** The message is sent twice. */
    record Duplicate() implements Fault {
    }

    /** The connection is closed instead of sending. */
    record Disconnect() implements Fault {
    }

    /** The operation fails with this exception. */
    record Fail(StrataException error) implements Fault {
    }

    /** The process halts at once (Runtime.halt), as kill -9 would; for crash tests in a child process. */
    record Crash() implements Fault {
    }
}
