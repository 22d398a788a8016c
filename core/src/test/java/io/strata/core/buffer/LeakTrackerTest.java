package io.strata.core.buffer;

import static org.assertj.core.api.Assertions.assertThat;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.PooledByteBufAllocator;
import java.util.List;
import org.junit.jupiter.api.Test;

class LeakTrackerTest {
    @Test
    void aLeakIsReportedWithItsStrataFramesAndTheClassAtBothEnds() throws Exception {
        LeakTracker.install();
        LeakTracker.flushAndDrain();
        List<String> leaks = List.of();
        for (int attempt = 0; attempt < 20 && leaks.isEmpty(); attempt++) {
            loseABuffer();
            leaks = LeakTracker.flushAndDrain();
        }
        assertThat(leaks).isNotEmpty();
        assertThat(leaks.get(0)).contains("#4:");

        String summary = LeakTracker.summary("SomeTest", leaks);

        assertThat(summary).startsWith(leaks.size() + " buffer leak(s) in SomeTest")
                .endsWith("(" + leaks.size() + " buffer leak(s) in SomeTest)")
                .contains("Created at:", "#1:", "LeakTrackerTest.loseABuffer", "LeakTrackerTest.touch")
                .doesNotContain("#4:");
        assertThat(summary.lines().count()).isLessThan(leaks.get(0).lines().count());
    }

    private static void loseABuffer() {
        ByteBuf buf = PooledByteBufAllocator.DEFAULT.directBuffer(64);
        for (int i = 0; i < 6; i++) {
            touch(buf, i);
        }
    }

    private static void touch(ByteBuf buf, int i) {
        buf.touch("step " + i); // a hint apiece: six distinct access records
        buf.writeInt(i);
    }
}
