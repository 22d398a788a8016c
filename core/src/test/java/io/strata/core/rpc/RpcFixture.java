package io.strata.core.rpc;

import io.strata.core.NodeContext;
import io.strata.core.fault.FaultInjector;
import java.net.InetSocketAddress;
import java.util.function.UnaryOperator;

/** A server node and a client node on loopback, each with its own context and event loops. */
final class RpcFixture implements AutoCloseable {
    final NodeContext serverCtx;
    final NodeContext clientCtx;
    final RpcServer server;
    final RpcClient client;
    final FaultInjector clientFaults;
    final FaultInjector serverFaults;

    RpcFixture(RpcOptions options, UnaryOperator<RpcServer.Builder> extra) {
        long seed = System.nanoTime();
        serverFaults = new FaultInjector(seed);
        clientFaults = new FaultInjector(seed + 1);
        serverCtx = NodeContext.builder("server").seed(seed).faults(serverFaults).eventLoopThreads(2).build();
        clientCtx = NodeContext.builder("client").seed(seed).faults(clientFaults).eventLoopThreads(2).build();
        Protocol serverProtocol = Protocol.of(CoreMessages.TYPES, TestMessages.SERVER_TYPES);
        Protocol protocol = Protocol.of(CoreMessages.TYPES, TestMessages.TYPES);
        RpcServer.Builder b = RpcServer.builder(serverCtx, serverProtocol).options(options);
        EchoService.register(serverCtx, b, 64 << 20);
        server = extra.apply(b).bind("127.0.0.1", 0);
        client = new RpcClient(clientCtx, protocol, options);
    }

    RpcFixture() {
        this(RpcOptions.DEFAULTS, b -> b);
    }

    InetSocketAddress address() {
        return server.address();
    }

    @Override
    public void close() {
        client.close();
        server.close();
        clientCtx.close();
        serverCtx.close();
    }
}
