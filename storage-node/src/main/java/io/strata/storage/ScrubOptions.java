package io.strata.storage;

import io.strata.config.ConfigException;
import io.strata.config.ConfigNode;
import io.strata.core.DataSize;
import java.time.Duration;

/**
 * The {@code [storage.scrub]} table: how each target's chunks are read back and checked in the
 * background (docs/internals/scrub.md).
 * <pre>
 * [storage.scrub]
 * enabled = true       # start passes on their own (false: only `strata admin scrub --start` starts one)
 * interval = "7d"      # from the end of one pass to the start of the next
 * rate = "32MiB"       # bytes per second one target's pass reads
 * </pre>
 *
 * @param enabled  whether passes start on their own, every {@code interval}
 * @param interval time from the end of one pass to the start of the next
 * @param rate     most bytes per second a pass reads on one target
 */
public record ScrubOptions(boolean enabled, Duration interval, DataSize rate) {
    public static final ScrubOptions DEFAULTS = new ScrubOptions(true, Duration.ofDays(7), DataSize.ofMiB(32));
    /** Passes only when asked for (tests, tools). */
    public static final ScrubOptions ON_DEMAND = new ScrubOptions(false, DEFAULTS.interval, DEFAULTS.rate);

    public ScrubOptions {
        if (interval.compareTo(Duration.ofSeconds(1)) < 0) {
            throw new ConfigException("storage.scrub.interval", "must be at least 1s, got " + interval);
        }
        if (rate.bytes() < 64 * 1024) {
            throw new ConfigException("storage.scrub.rate", "must be at least 64KiB (per second), got " + rate);
        }
    }

    public ScrubOptions withRate(DataSize r) {
        return new ScrubOptions(enabled, interval, r);
    }

    public ScrubOptions withInterval(Duration d) {
        return new ScrubOptions(enabled, d, rate);
    }

    static ScrubOptions read(ConfigNode s) {
        return new ScrubOptions(s.bool("enabled", DEFAULTS.enabled),
                s.duration("interval", DEFAULTS.interval, Duration.ofSeconds(1), Duration.ofDays(3650)),
                s.size("rate", DEFAULTS.rate, DataSize.ofKiB(64), DataSize.ofGiB(1024)));
    }
}
