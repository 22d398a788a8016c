package io.strata.core.qos;

import io.strata.core.tier.QosClass;
import java.util.EnumMap;
import java.util.Map;

/**
 * How one device's time is shared between the {@link QosClass}es: per class a reservation (bytes
 * per second it gets whenever it asks, even against heavier classes), a weight (its share of
 * what is left over) and a limit (bytes per second it never exceeds, even on an idle device;
 * 0: none). An operation costs its bytes plus {@code opCost}, so that many small reads weigh more
 * than their bytes. See docs/internals/qos.md for the model and the defaults.
 *
 * @param enabled whether requests are scheduled at all (false: each runs as it arrives)
 * @param slots   operations in flight on the device at once; the queue in front of it is where classes are ordered
 * @param opCost  bytes one operation costs on top of its size
 */
public record QosShares(boolean enabled, int slots, long opCost, Map<QosClass, Share> shares) {
    /** One class's share: reservation and limit in bytes per second (0: none), weight 1..1000. */
    public record Share(long reservation, int weight, long limit) {
        public Share {
            if (reservation < 0 || limit < 0) {
                throw new IllegalArgumentException("reservation and limit must not be negative");
            }
            if (weight < 1 || weight > 1000) {
                throw new IllegalArgumentException("weight must be 1..1000, got " + weight);
            }
            if (limit > 0 && reservation > limit) {
                throw new IllegalArgumentException("reservation " + reservation + " exceeds the limit " + limit);
            }
        }
    }

    private static final long MIB = 1L << 20;

    /**
     * The default shares: training reads and interactive I/O weigh most and have a floor,
     * checkpoint writes get a fair share and a floor so a save always progresses, prefetch and
     * background work (drain, resync, scrub, GC) get what the foreground leaves, background capped.
     */
    private static final Map<QosClass, Share> DEFAULT_SHARES = Map.of(
            QosClass.INTERACTIVE, new Share(32 * MIB, 8, 0),
            QosClass.TRAINING_READ, new Share(64 * MIB, 8, 0),
            QosClass.CHECKPOINT, new Share(64 * MIB, 3, 0),
            QosClass.PREFETCH, new Share(0, 1, 0),
            QosClass.BACKGROUND, new Share(0, 1, 512 * MIB));

    /** Scheduling on, 16 slots, 64 KiB per operation, the default shares. */
    public static final QosShares DEFAULTS = new QosShares(true, 16, 64 * 1024, DEFAULT_SHARES);

    /** Scheduling switched off: every request runs as it arrives. */
    public static final QosShares OFF = new QosShares(false, DEFAULTS.slots, DEFAULTS.opCost, DEFAULTS.shares);

    public QosShares {
        if (slots < 1 || slots > 4096) {
            throw new IllegalArgumentException("slots must be 1..4096, got " + slots);
        }
        if (opCost < 0) {
            throw new IllegalArgumentException("op cost must not be negative");
        }
        EnumMap<QosClass, Share> all = new EnumMap<>(QosClass.class);
        for (QosClass c : QosClass.values()) {
            all.put(c, shares.getOrDefault(c, DEFAULT_SHARES.get(c)));
        }
        shares = Map.copyOf(all);
    }

    public Share share(QosClass c) {
        return shares.get(c);
    }

    public QosShares withEnabled(boolean on) {
        return new QosShares(on, slots, opCost, shares);
    }

    public QosShares withShare(QosClass c, Share s) {
        EnumMap<QosClass, Share> m = new EnumMap<>(shares);
        m.put(c, s);
        return new QosShares(enabled, slots, opCost, m);
    }

    public QosShares withSlots(int n) {
        return new QosShares(enabled, n, opCost, shares);
    }
}
