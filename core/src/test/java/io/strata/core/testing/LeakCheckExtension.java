package io.strata.core.testing;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.buffer.UnpooledByteBufAllocator;
import io.strata.core.buffer.LeakTracker;
import java.util.List;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * Fails a test class when Netty reports a leaked buffer while it ran. Registered for every
 * JUnit Jupiter test in every module through extension auto-detection (core's test-jar); tests
 * run with {@code -Dio.netty.leakDetection.level=paranoid}, so every buffer is tracked. The
 * recording detector is installed by {@link LeakTrackerSession} before any test runs.
 *
 * <p>Netty notices a leak only when the lost buffer is garbage-collected and a later allocation
 * polls its queue; {@link #assertNoLeaks} forces a few GCs and allocations to flush reports.
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
        for (int round = 0; round < 3; round++) {
            System.gc();
            Thread.sleep(20);
            for (int i = 0; i < 64; i++) {
                ByteBuf a = PooledByteBufAllocator.DEFAULT.buffer(16);
                a.release();
                ByteBuf b = UnpooledByteBufAllocator.DEFAULT.buffer(16);
                b.release();
                ByteBuf c = PooledByteBufAllocator.DEFAULT.directBuffer(16);
                c.release();
            }
        }
        List<String> leaks = LeakTracker.drain();
        if (!leaks.isEmpty()) {
            throw new AssertionError(leaks.size() + " buffer leak(s) in " + where
                    + ":\n" + String.join("\n----\n", leaks));
        }
    }
}
