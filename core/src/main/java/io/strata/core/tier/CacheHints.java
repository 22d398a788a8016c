package io.strata.core.tier;

import java.time.Duration;
import java.util.Optional;

/**
 * What the file's directory policy tells cache tiers (L1, L2) about one I/O. The client fills
 * it from the effective policy at open; tiers that do not cache ignore it.
 *
 * @param cacheData          false for {@code consistency = strict}: data bypasses client caches
 * @param writeBack          a cache tier may absorb this write and flush it later
 * @param writeBackMaxAge    flush absorbed writes at the latest after this long
 * @param writeBackMaxBytes  flush a file's absorbed writes once they reach this many bytes
 * @param pin                keep the file's blocks regardless of eviction
 * @param ttl                drop the file's blocks this long after last use (empty: until evicted)
 */
public record CacheHints(boolean cacheData, boolean writeBack, Duration writeBackMaxAge, long writeBackMaxBytes,
                         boolean pin, Optional<Duration> ttl) {
    /** Cache reads, write through, no pin, no TTL. */
    public static final CacheHints DEFAULT = new CacheHints(true, false, Duration.ofSeconds(5), 4L << 20, false, Optional.empty());

    /** Nothing cached (strict consistency). */
    public static final CacheHints BYPASS = new CacheHints(false, false, Duration.ofSeconds(5), 4L << 20, false, Optional.empty());

    public CacheHints {
        if (writeBackMaxAge == null || writeBackMaxAge.isNegative() || writeBackMaxBytes <= 0 || ttl == null) {
            throw new IllegalArgumentException("bad cache hints: max age " + writeBackMaxAge + ", max bytes " + writeBackMaxBytes);
        }
        if (writeBack && !cacheData) {
            throw new IllegalArgumentException("write-back needs a data cache");
        }
    }
}
