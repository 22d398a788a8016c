package io.strata.l3;

import java.time.Duration;

/**
 * Settings of a {@link StorageClient}.
 *
 * @param readPolicy     which replica a read tries first
 * @param localHost      this client's host as routing names it ({@code NodeInfo.domain("host")}),
 *                       for {@link ReadPolicy#PREFER_LOCAL}; null when unknown
 * @param attemptTimeout one attempt's budget (a write's attempt covers the whole chain); the
 *                       overall deadline is the call's {@code IoOptions.timeout()}
 */
public record StorageClientOptions(ReadPolicy readPolicy, String localHost, Duration attemptTimeout) {
    public static final StorageClientOptions DEFAULTS = new StorageClientOptions(ReadPolicy.RANDOM, null, Duration.ofSeconds(10));

    public StorageClientOptions {
        if (readPolicy == null || attemptTimeout == null || attemptTimeout.isNegative() || attemptTimeout.isZero()) {
            throw new IllegalArgumentException("a storage client needs a read policy and a positive attempt timeout");
        }
    }

    public StorageClientOptions withReadPolicy(ReadPolicy p) {
        return new StorageClientOptions(p, localHost, attemptTimeout);
    }

    public StorageClientOptions withLocalHost(String host) {
        return new StorageClientOptions(readPolicy, host, attemptTimeout);
    }

    public StorageClientOptions withAttemptTimeout(Duration d) {
        return new StorageClientOptions(readPolicy, localHost, d);
    }
}
