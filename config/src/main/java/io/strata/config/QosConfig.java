package io.strata.config;

import io.strata.core.DataSize;
import io.strata.core.qos.QosShares;
import io.strata.core.tier.QosClass;
import java.util.EnumMap;
import java.util.Map;

/**
 * Reads a daemon's {@code qos} table (under {@code [storage]} or {@code [l2]}) into
 * {@link QosShares}. Every key is optional; a class table names only what it changes:
 * <pre>
 * [storage.qos]
 * enabled = true          # false: requests run in arrival order
 * slots = 16              # operations on one device at once
 * op-cost = "64KiB"       # what one operation costs on top of its bytes
 * training-read = { reservation = "64MiB", weight = 8, limit = "0" }   # per second; limit 0: none
 * </pre>
 */
public final class QosConfig {
    private QosConfig() {
    }

    public static QosShares read(ConfigNode qos) {
        return read(qos, QosShares.DEFAULTS);
    }

    /** The table over defaults {@code d}: a key left out keeps its value in {@code d}. */
    public static QosShares read(ConfigNode qos, QosShares d) {
        Map<QosClass, QosShares.Share> shares = new EnumMap<>(QosClass.class);
        for (QosClass c : QosClass.values()) {
            QosShares.Share def = d.share(c);
            ConfigNode t = qos.section(c.policyName());
            long reservation = t.size("reservation", DataSize.ofBytes(def.reservation()), DataSize.ofBytes(0), DataSize.ofGiB(1024)).bytes();
            int weight = t.integer("weight", def.weight(), 1, 1000);
            long limit = t.size("limit", DataSize.ofBytes(def.limit()), DataSize.ofBytes(0), DataSize.ofGiB(1024)).bytes();
            try {
                shares.put(c, new QosShares.Share(reservation, weight, limit));
            } catch (IllegalArgumentException e) {
                throw new ConfigException(t.path(), e.getMessage());
            }
        }
        return new QosShares(qos.bool("enabled", d.enabled()), qos.integer("slots", d.slots(), 1, 4096),
                qos.size("op-cost", DataSize.ofBytes(d.opCost()), DataSize.ofBytes(0), DataSize.ofMiB(64)).bytes(), shares);
    }
}
