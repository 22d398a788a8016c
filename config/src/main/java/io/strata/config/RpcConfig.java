package io.strata.config;

import io.strata.core.DataSize;
import io.strata.core.rpc.RpcOptions;
import java.time.Duration;

/** Reads the {@code [rpc]} table into {@link RpcOptions}. Every key is optional. */
public final class RpcConfig {
    private RpcConfig() {
    }

    public static RpcOptions read(ConfigNode rpc) {
        RpcOptions d = RpcOptions.DEFAULTS;
        return new RpcOptions(
                (int) rpc.size("max-body", DataSize.ofBytes(d.maxBodyBytes()), DataSize.ofKiB(4), DataSize.ofMiB(64)).bytes(),
                rpc.size("max-payload", d.maxPayload(), DataSize.ofKiB(64), DataSize.ofMiB(1024)),
                rpc.integer("max-in-flight", d.maxInFlight(), 1, 1 << 20),
                rpc.integer("max-queued", d.maxQueued(), 0, 1 << 24),
                rpc.integer("server-max-in-flight", d.serverMaxInFlight(), 1, 1 << 20),
                rpc.duration("default-timeout", d.defaultTimeout(), Duration.ofMillis(1), Duration.ofHours(24)),
                rpc.duration("connect-timeout", d.connectTimeout(), Duration.ofMillis(1), Duration.ofMinutes(10)),
                rpc.integer("connections-per-peer", d.connectionsPerPeer(), 1, 64),
                rpc.size("write-buffer-high", d.writeBufferHigh(), DataSize.ofKiB(64), DataSize.ofMiB(1024)),
                rpc.integer("max-connections", d.maxConnections(), 1, 1 << 20),
                rpc.duration("idle-timeout", d.idleTimeout(), Duration.ofSeconds(1), Duration.ofDays(7)),
                rpc.duration("read-timeout", d.readTimeout(), Duration.ofMillis(100), Duration.ofHours(1)),
                rpc.integer("server-max-in-flight-per-identity", d.serverMaxInFlightPerIdentity(), 1, 1 << 24));
    }
}
