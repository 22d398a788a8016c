package io.strata.cli;

import io.strata.core.rpc.Addresses;
import io.strata.config.ConfigNode;
import io.strata.core.NodeContext;
import io.strata.core.auth.Credentials;
import io.strata.core.tls.TlsContext;
import io.strata.core.rpc.CoreMessage;
import io.strata.core.rpc.CoreMessages;
import io.strata.core.rpc.Payload;
import io.strata.core.rpc.Response;
import io.strata.core.rpc.Protocol;
import io.strata.core.rpc.RpcClient;
import io.strata.core.rpc.RpcOptions;
import io.strata.core.util.Futures;
import java.io.PrintWriter;
import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Locale;
import java.util.Optional;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/** {@code strata ping HOST:PORT}: a round trip to any Strata node over the RPC layer. */
@Command(name = "ping", mixinStandardHelpOptions = true,
        description = {"Send RPC pings to a Strata node and print the round-trip times.", "",
                "Any Strata process answers (storage node, meta service, cluster manager, `strata node`), with its "
                        + "name and version: a check of the network and the RPC layer between two hosts."},
        footerHeading = "%nExamples:%n",
        footer = {"  strata ping 10.0.0.7:9400", "  strata ping -c 10 --timeout 1s storage-3:9400",
                "  strata ping --config data/client.toml 127.0.0.1:9400"})
final class PingCommand implements Callable<Integer> {
    @Parameters(paramLabel = "HOST:PORT", description = "The node's RPC address.")
    String address;

    @Option(names = {"-c", "--count"}, defaultValue = "3", description = "Pings to send (default ${DEFAULT-VALUE}).")
    int count;

    @Option(names = "--timeout", defaultValue = "3s", description = "Per-ping timeout (default ${DEFAULT-VALUE}).")
    String timeout;

    @Option(names = "--token-file", paramLabel = "FILE", description = "Token to present to a node that requires authentication.")
    Path tokenFile;

    @Option(names = "--config", paramLabel = "FILE",
            description = "Client config whose [tls] certificate (and [auth] token, unless --token-file) to present, e.g. DATA/client.toml.")
    Path config;

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    @Override
    public Integer call() {
        InetSocketAddress target = resolve(Addresses.parse(address));
        Duration t = io.strata.config.Durations.parse(timeout);
        PrintWriter out = spec.commandLine().getOut();
        Optional<Credentials> token = tokenFile != null ? Optional.of(ClientSource.read(tokenFile))
                : config != null ? ClientSource.credentials(config) : Optional.empty();
        Optional<TlsContext> tls = config != null ? ClientSource.tls(config) : Optional.empty();
        try (NodeContext ctx = ClientSource.context("strata-ping", token, tls);
             RpcClient client = new RpcClient(ctx, Protocol.of(CoreMessages.TYPES), RpcOptions.DEFAULTS)) {
            for (int i = 0; i < count; i++) {
                long t0 = System.nanoTime();
                CoreMessage.Pong pong;
                try (Response r = Futures.join(client.call(target, new CoreMessage.Ping(i), Payload.NONE, t), t.plusSeconds(1))) {
                    pong = r.message(CoreMessage.Pong.class);
                }
                double ms = (System.nanoTime() - t0) / 1e6;
                out.printf(Locale.ROOT, "pong from %s (%s, strata %s): seq=%d time=%.2f ms%n", address, pong.node(), pong.version(), i, ms);
            }
        }
        return 0;
    }

    static InetSocketAddress resolve(InetSocketAddress a) {
        return a.isUnresolved() ? new InetSocketAddress(a.getHostString(), a.getPort()) : a;
    }
}
