package io.strata.cli;

import io.strata.client.FileStatus;
import io.strata.client.StrataFileSystem;
import io.strata.core.util.Futures;
import io.strata.protocol.meta.Staging;
import java.time.Duration;
import java.time.Instant;
import java.util.Locale;
import java.util.Optional;

/** How {@code strata stat} shows a staged file: where its newest bytes are durable, and the drain's progress. */
final class StagingView {
    private StagingView() {
    }

    static Optional<String> describe(StrataFileSystem fs, FileStatus st) {
        Optional<Staging> r = Futures.join(fs.meta().stagingAsync(fs.caller(), st.inode()), Duration.ofSeconds(30));
        return r.map(StagingView::describe);
    }

    static String describe(Staging s) {
        String where = switch (s.state()) {
            case DURABLE -> "l3 (drained)";
            case DRAINING -> "l2, draining to l3";
            case STAGED -> "l2, drain not begun";
            case LOST -> "LOST: " + s.lost();
        };
        StringBuilder b = new StringBuilder("  durable in: ").append(where);
        b.append(String.format(Locale.ROOT, "   (staging epoch %d, publish %d, draining %d, durable %d)", s.epoch(), s.publishVersion(),
                s.drainingVersion(), s.durableVersion()));
        if (s.publishedMillis() > 0) {
            b.append("\n  staged: published ").append(Instant.ofEpochMilli(s.publishedMillis()));
            if (s.drainingMillis() > 0) {
                b.append(", drain began ").append(Instant.ofEpochMilli(s.drainingMillis()));
            }
            if (s.durableMillis() > 0 && s.state() == Staging.State.DURABLE) {
                b.append(", durable in L3 ").append(Instant.ofEpochMilli(s.durableMillis()))
                        .append(String.format(Locale.ROOT, " (%.1f s after the publish)", Math.max(0, s.durableMillis() - s.publishedMillis()) / 1000.0));
            }
        }
        return b.toString();
    }
}
