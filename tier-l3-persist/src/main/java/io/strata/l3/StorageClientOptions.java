package io.strata.l3;

import io.strata.core.DataSize;
import io.strata.core.tier.QosClass;
import java.time.Duration;
import java.util.EnumMap;
import java.util.Map;

/**
 * Settings of a {@link StorageClient}.
 *
 * @param readPolicy     which replica a read tries first
 * @param localHost      this client's host as routing names it ({@code NodeInfo.domain("host")}),
 *                       for {@link ReadPolicy#PREFER_LOCAL}; null when unknown
 * @param attemptTimeout one attempt's budget (a write's attempt covers the whole chain); the
 *                       overall deadline is the call's {@code IoOptions.timeout()}
 * @param inFlight       bytes of reads and writes each class may have in flight from this client
 *                       (a class missing or at 0 is not limited); see {@link #DEFAULT_IN_FLIGHT}
 */
public record StorageClientOptions(ReadPolicy readPolicy, String localHost, Duration attemptTimeout,
                                   Map<QosClass, Long> inFlight) {
    /**
     * The bulk classes are held to a few dozen MiB in flight: enough to keep every chain of a
     * small cluster busy with 1 MiB transfers, few enough that the storage nodes' queues (and
     * the CPU that drains them) are not swamped while a dataloader's reads wait.
     */
    public static final Map<QosClass, Long> DEFAULT_IN_FLIGHT = Map.of(
            QosClass.CHECKPOINT, DataSize.ofMiB(32).bytes(),
            QosClass.PREFETCH, DataSize.ofMiB(16).bytes(),
            QosClass.BACKGROUND, DataSize.ofMiB(16).bytes());

    public static final StorageClientOptions DEFAULTS = new StorageClientOptions(ReadPolicy.RANDOM, null, Duration.ofSeconds(10),
            DEFAULT_IN_FLIGHT);

    public StorageClientOptions {
        if (readPolicy == null || attemptTimeout == null || attemptTimeout.isNegative() || attemptTimeout.isZero()) {
            throw new IllegalArgumentException("a storage client needs a read policy and a positive attempt timeout");
        }
        EnumMap<QosClass, Long> copy = new EnumMap<>(QosClass.class);
        inFlight.forEach((c, n) -> {
            if (n < 0) {
                throw new IllegalArgumentException("in-flight bytes of " + c.policyName() + " must be >= 0, got " + n);
            }
            copy.put(c, n);
        });
        inFlight = Map.copyOf(copy);
    }

    public StorageClientOptions withReadPolicy(ReadPolicy p) {
        return new StorageClientOptions(p, localHost, attemptTimeout, inFlight);
    }

    public StorageClientOptions withLocalHost(String host) {
        return new StorageClientOptions(readPolicy, host, attemptTimeout, inFlight);
    }

    public StorageClientOptions withAttemptTimeout(Duration d) {
        return new StorageClientOptions(readPolicy, localHost, d, inFlight);
    }

    public StorageClientOptions withInFlight(Map<QosClass, Long> limits) {
        return new StorageClientOptions(readPolicy, localHost, attemptTimeout, limits);
    }
}
