package io.strata.testing;

import io.strata.core.buffer.LeakTracker;
import org.junit.platform.launcher.LauncherSession;
import org.junit.platform.launcher.LauncherSessionListener;

/** Installs the recording leak detector before any test engine (Jupiter, jqwik) starts. */
public final class LeakTrackerSession implements LauncherSessionListener {
    @Override
    public void launcherSessionOpened(LauncherSession session) {
        LeakTracker.install();
    }
}
