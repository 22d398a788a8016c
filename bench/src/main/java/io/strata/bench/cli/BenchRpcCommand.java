package io.strata.bench.cli;

import io.strata.bench.RpcBench;
import io.strata.config.Durations;
import io.strata.core.DataSize;
import io.strata.core.rpc.Transport;
import io.strata.core.tls.TlsEngine;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code strata bench rpc}: the RPC layer against raw Netty and iperf3, and over TLS against plaintext. */
@Command(name = "rpc", mixinStandardHelpOptions = true,
        description = "Bulk transfer over the RPC layer vs raw Netty (and iperf3) on loopback, then over mutual TLS vs plaintext.",
        footerHeading = "%nExamples:%n", footer = {"  strata bench rpc --sizes 1MiB --streams 1,8 --no-iperf",
                "  strata bench rpc --sizes 1MiB --streams 1,8 --tls openssl,jdk --no-iperf",
                "  strata bench rpc --sizes 1MiB --streams 8 --tls-connections 1,2 --no-iperf"})
public final class BenchRpcCommand implements Callable<Integer> {
    @Option(names = "--sizes", defaultValue = "1MiB,64KiB", split = ",", description = "Payload sizes (default ${DEFAULT-VALUE}).")
    List<String> sizes;

    @Option(names = "--streams", defaultValue = "1,8", split = ",", description = "Concurrent streams (default ${DEFAULT-VALUE}).")
    List<Integer> streams;

    @Option(names = "--round", defaultValue = "2s", description = "Length of one round (default ${DEFAULT-VALUE}).")
    String round;

    @Option(names = "--rounds", defaultValue = "3", description = "Alternating rounds per case (default ${DEFAULT-VALUE}).")
    int rounds;

    @Option(names = "--transport", defaultValue = "auto", description = "auto, nio, epoll or io_uring (default ${DEFAULT-VALUE}).")
    String transport;

    @Option(names = "--no-iperf", description = "Skip the iperf3 baseline.")
    boolean noIperf;

    @Option(names = "--tls", defaultValue = "auto", split = ",",
            description = "TLS engines to compare with plaintext: auto, openssl, jdk (comma-separated), or none (default ${DEFAULT-VALUE}).")
    List<String> tls;

    @Option(names = "--tls-connections", defaultValue = "1", split = ",",
            description = "Connections the TLS comparison spreads its streams over, each with its own event loop on both sides; "
                    + "comma-separated counts run one after another (default ${DEFAULT-VALUE}).")
    List<Integer> tlsConnections;

    @Override
    public Integer call() throws Exception {
        List<DataSize> s = new ArrayList<>();
        for (String x : sizes) {
            s.add(DataSize.parse(x));
        }
        BenchArgs.eachBetween("--streams", streams, 1, 1024);
        BenchArgs.eachBetween("--tls-connections", tlsConnections, 1, 64);
        if (rounds < 1) {
            throw new IllegalArgumentException("--rounds must be at least 1");
        }
        List<TlsEngine> engines = new ArrayList<>();
        for (String e : tls) {
            if (!e.equalsIgnoreCase("none")) {
                engines.add(TlsEngine.resolve(e));
            }
        }
        RpcBench.run(new RpcBench.Options(s, streams, Durations.parse(round), rounds, Transport.resolve(transport), !noIperf, engines,
                        tlsConnections),
                BenchArgs.stdout());
        return 0;
    }
}
