package io.strata.testing;

import io.strata.core.buffer.LeakTracker;
import java.util.List;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * Fails a test class when Netty reports a leaked buffer while it ran. Registered for every
 * JUnit Jupiter test through extension auto-detection (test-support, a test dependency of every module but core); tests run with
 * {@code -Dio.netty.leakDetection.level=paranoid}, so every buffer is tracked. The recording
 * detector is installed by {@link LeakTrackerSession} before any test runs.
 */
public final class LeakCheckExtension implements AfterAllCallback {
    static {
        LeakTracker.install();
    }

    @Override
    public void afterAll(ExtensionContext context) throws Exception {
        assertNoLeaks(context.getDisplayName());
    }

    /** Throws an AssertionError listing every leak reported since the last check. */
    public static void assertNoLeaks(String where) throws InterruptedException {
        List<String> leaks = LeakTracker.flushAndDrain();
        if (!leaks.isEmpty()) {
            throw new AssertionError(LeakTracker.summary(where, leaks));
        }
    }
}
