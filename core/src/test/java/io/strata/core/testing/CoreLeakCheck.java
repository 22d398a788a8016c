package io.strata.core.testing;

import io.strata.core.buffer.LeakTracker;
import java.util.List;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.platform.launcher.LauncherSession;
import org.junit.platform.launcher.LauncherSessionListener;

/**
 * Core's own tests cannot use test-support (it depends on core), so they get the same leak check
 * through this registration: the recording detector installed before any engine starts, and a
 * failure for any leak reported while a test class ran.
 */
public final class CoreLeakCheck implements AfterAllCallback, LauncherSessionListener {
    @Override
    public void launcherSessionOpened(LauncherSession session) {
        LeakTracker.install();
    }

    @Override
    public void afterAll(ExtensionContext context) throws Exception {
        assertNoLeaks(context.getDisplayName());
    }

    /** Throws an AssertionError listing every leak reported since the last check (jqwik tests call it themselves). */
    public static void assertNoLeaks(String where) throws InterruptedException {
        LeakTracker.install();
        List<String> leaks = LeakTracker.flushAndDrain();
        if (!leaks.isEmpty()) {
            throw new AssertionError(LeakTracker.summary(where, leaks));
        }
    }
}
