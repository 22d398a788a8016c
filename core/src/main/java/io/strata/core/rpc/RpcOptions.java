package io.strata.core.rpc;

import io.strata.core.DataSize;
import java.time.Duration;

/**
 * Settings of the RPC layer, shared by servers and clients. Validated here; the config module
 * loads them from the {@code [rpc]} section of a node's TOML file, except the server's connection
 * limits ({@code maxConnections}, {@code idleTimeout}, {@code readTimeout}), which that table does
 * not carry yet and which take their defaults there.
 *
 * @param maxBodyBytes          largest message body accepted (payloads are separate)
 * @param maxPayload            largest payload accepted in one frame (a 64 MiB chunk plus slack)
 * @param maxInFlight           requests one connection may have outstanding; further calls wait
 * @param maxQueued             calls that may wait for a slot before new ones fail with OVERLOADED
 * @param serverMaxInFlight     requests a server runs per connection before it stops reading
 * @param defaultTimeout        deadline for calls that do not give one
 * @param connectTimeout        TCP connect timeout
 * @param connectionsPerPeer    TCP connections a client opens to one peer (spread round-robin)
 * @param writeBufferHigh       bytes queued on a socket before it counts as unwritable
 * @param maxConnections        connections a server keeps open; it closes further ones as they arrive
 * @param idleTimeout           a server closes a connection that has nothing in flight and has neither
 *                              read nor written for this long; a client replaces a connection that
 *                              has been quiet for half of it before using it again
 * @param readTimeout           a server closes a connection that stops sending in the middle of a frame
 *                              for this long
 * @param serverMaxInFlightPerIdentity requests a server that authenticates runs at once for one identity
 *                              (token role and subject) over all of its connections; a connection of an
 *                              identity at its limit stops reading until one of them finishes
 */
public record RpcOptions(int maxBodyBytes, DataSize maxPayload, int maxInFlight, int maxQueued,
                         int serverMaxInFlight, Duration defaultTimeout, Duration connectTimeout,
                         int connectionsPerPeer, DataSize writeBufferHigh,
                         int maxConnections, Duration idleTimeout, Duration readTimeout, int serverMaxInFlightPerIdentity) {

    public static final RpcOptions DEFAULTS = new RpcOptions(1 << 20, DataSize.ofMiB(80), 256, 4096, 256,
            Duration.ofSeconds(30), Duration.ofSeconds(3), 1, DataSize.ofMiB(8),
            4096, Duration.ofMinutes(10), Duration.ofSeconds(30), 1024);

    public RpcOptions {
        positive("rpc.max-body", maxBodyBytes);
        if (maxPayload.bytes() <= 0 || maxPayload.bytes() > Integer.MAX_VALUE) {
            throw new IllegalArgumentException("rpc.max-payload must be in (0, 2GiB), got " + maxPayload);
        }
        positive("rpc.max-in-flight", maxInFlight);
        if (maxQueued < 0) {
            throw new IllegalArgumentException("rpc.max-queued must be >= 0, got " + maxQueued);
        }
        positive("rpc.server-max-in-flight", serverMaxInFlight);
        positiveDuration("rpc.default-timeout", defaultTimeout);
        positiveDuration("rpc.connect-timeout", connectTimeout);
        positive("rpc.connections-per-peer", connectionsPerPeer);
        if (writeBufferHigh.bytes() < 64 * 1024 || writeBufferHigh.bytes() > Integer.MAX_VALUE) {
            throw new IllegalArgumentException("rpc.write-buffer-high must be in [64KiB, 2GiB), got " + writeBufferHigh);
        }
        positive("rpc.max-connections", maxConnections);
        positiveDuration("rpc.idle-timeout", idleTimeout);
        positiveDuration("rpc.read-timeout", readTimeout);
        positive("rpc.server-max-in-flight-per-identity", serverMaxInFlightPerIdentity);
    }

    public RpcOptions withMaxInFlight(int n) {
        return new RpcOptions(maxBodyBytes, maxPayload, n, maxQueued, serverMaxInFlight, defaultTimeout,
                connectTimeout, connectionsPerPeer, writeBufferHigh, maxConnections, idleTimeout, readTimeout, serverMaxInFlightPerIdentity);
    }

    public RpcOptions withMaxQueued(int n) {
        return new RpcOptions(maxBodyBytes, maxPayload, maxInFlight, n, serverMaxInFlight, defaultTimeout,
                connectTimeout, connectionsPerPeer, writeBufferHigh, maxConnections, idleTimeout, readTimeout, serverMaxInFlightPerIdentity);
    }

    public RpcOptions withServerMaxInFlight(int n) {
        return new RpcOptions(maxBodyBytes, maxPayload, maxInFlight, maxQueued, n, defaultTimeout,
                connectTimeout, connectionsPerPeer, writeBufferHigh, maxConnections, idleTimeout, readTimeout, serverMaxInFlightPerIdentity);
    }

    public RpcOptions withDefaultTimeout(Duration d) {
        return new RpcOptions(maxBodyBytes, maxPayload, maxInFlight, maxQueued, serverMaxInFlight, d,
                connectTimeout, connectionsPerPeer, writeBufferHigh, maxConnections, idleTimeout, readTimeout, serverMaxInFlightPerIdentity);
    }

    public RpcOptions withConnectionsPerPeer(int n) {
        return new RpcOptions(maxBodyBytes, maxPayload, maxInFlight, maxQueued, serverMaxInFlight, defaultTimeout,
                connectTimeout, n, writeBufferHigh, maxConnections, idleTimeout, readTimeout, serverMaxInFlightPerIdentity);
    }

    public RpcOptions withMaxPayload(DataSize s) {
        return new RpcOptions(maxBodyBytes, s, maxInFlight, maxQueued, serverMaxInFlight, defaultTimeout,
                connectTimeout, connectionsPerPeer, writeBufferHigh, maxConnections, idleTimeout, readTimeout, serverMaxInFlightPerIdentity);
    }

    public RpcOptions withMaxConnections(int n) {
        return new RpcOptions(maxBodyBytes, maxPayload, maxInFlight, maxQueued, serverMaxInFlight, defaultTimeout,
                connectTimeout, connectionsPerPeer, writeBufferHigh, n, idleTimeout, readTimeout, serverMaxInFlightPerIdentity);
    }

    public RpcOptions withIdleTimeout(Duration d) {
        return new RpcOptions(maxBodyBytes, maxPayload, maxInFlight, maxQueued, serverMaxInFlight, defaultTimeout,
                connectTimeout, connectionsPerPeer, writeBufferHigh, maxConnections, d, readTimeout, serverMaxInFlightPerIdentity);
    }

    public RpcOptions withReadTimeout(Duration d) {
        return new RpcOptions(maxBodyBytes, maxPayload, maxInFlight, maxQueued, serverMaxInFlight, defaultTimeout,
                connectTimeout, connectionsPerPeer, writeBufferHigh, maxConnections, idleTimeout, d, serverMaxInFlightPerIdentity);
    }

    public RpcOptions withServerMaxInFlightPerIdentity(int n) {
        return new RpcOptions(maxBodyBytes, maxPayload, maxInFlight, maxQueued, serverMaxInFlight, defaultTimeout,
                connectTimeout, connectionsPerPeer, writeBufferHigh, maxConnections, idleTimeout, readTimeout, n);
    }

    private static void positive(String key, int v) {
        if (v <= 0) {
            throw new IllegalArgumentException(key + " must be positive, got " + v);
        }
    }

    private static void positiveDuration(String key, Duration d) {
        if (d == null || d.isNegative() || d.isZero()) {
            throw new IllegalArgumentException(key + " must be a positive duration, got " + d);
        }
    }
}
