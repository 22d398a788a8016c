package io.strata.mgmtd;

import io.strata.core.NodeContext;
import io.strata.core.fault.FaultInjector;
import io.strata.core.time.StrataClock;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/** Test helpers: contexts and manager peers on loopback with free ports. */
final class Managers {
    private Managers() {
    }

    static NodeContext ctx(String name, StrataClock clock, long seed) {
        return NodeContext.builder(name).clock(clock).seed(seed).faults(new FaultInjector(seed))
                .eventLoopThreads(1).blockingThreads(2).schedulerThreads(2).build();
    }

    static InetSocketAddress loopback(int port) {
        return InetSocketAddress.createUnresolved("127.0.0.1", port);
    }

    static int freePort() {
        try {
            return MgmtdServer.freePort();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Configs of an n-peer group sharing {@code dir}; peers m1..mn. */
    static List<MgmtdConfig> group(Path dir, int n, Duration lease) {
        List<MgmtdConfig.Peer> peers = new ArrayList<>();
        for (int i = 1; i <= n; i++) {
            peers.add(new MgmtdConfig.Peer("m" + i, loopback(freePort()), loopback(freePort())));
        }
        List<MgmtdConfig> out = new ArrayList<>();
        for (MgmtdConfig.Peer p : peers) {
            out.add(new MgmtdConfig(p.id(), peers, dir.resolve(p.id()), lease, lease.dividedBy(5), Duration.ofMillis(50),
                    Duration.ofMillis(700), 1000, 0, io.strata.core.rpc.RpcOptions.DEFAULTS));
        }
        return out;
    }
}
