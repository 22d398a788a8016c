package io.strata.bench;

import io.strata.core.DataSize;
import io.strata.core.NodeContext;
import io.strata.core.rpc.CoreMessages;
import io.strata.core.rpc.EchoService;
import io.strata.core.rpc.Protocol;
import io.strata.core.rpc.RpcClient;
import io.strata.core.rpc.RpcOptions;
import io.strata.core.rpc.RpcServer;
import io.strata.core.tls.CertificateAuthority;
import io.strata.core.tls.TlsContext;
import io.strata.core.tls.TlsEngine;
import java.io.PrintStream;
import java.lang.management.ManagementFactory;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The TLS part of {@code strata bench rpc}: the RPC layer's bulk Echo over plaintext and over
 * mutual TLS (certificates of a CA made for the run, EC P-256, TLS 1.3), in alternating rounds
 * on the same machine, per engine asked for. Besides throughput it reports the process's CPU
 * seconds per GB moved (both ends run in this process: {@code OperatingSystemMXBean}'s process
 * CPU time over each round, divided by the payload bytes sent). The baseline is the same
 * exchange in plaintext; the last line is {@code tls_vs_plain_1mib=<ratio>}, TLS over plaintext
 * throughput for 1 MiB payloads with the first engine (the worst over the stream counts) and the
 * first connection count; the other counts get a {@code tls_vs_plain_1mib_c<N>} line each. With N
 * connections both sides run N event loops, so the streams' encryption and decryption spread
 * over N threads per side, as in the daemons (one event loop per core).
 */
final class TlsBench {
    private TlsBench() {
    }

    private record Side(String name, NodeContext serverCtx, NodeContext clientCtx, RpcServer server, RpcClient client) implements AutoCloseable {
        /** {@code connections}: the client's connections to the server, and each side's event loops. */
        static Side of(String name, Protocol protocol, RpcBench.Options o, int connections, TlsContext serverTls, TlsContext clientTls) {
            NodeContext s = NodeContext.builder("bench-server-" + name).transport(o.transport()).eventLoopThreads(connections).tls(serverTls).build();
            NodeContext c = NodeContext.builder("bench-client-" + name).transport(o.transport()).eventLoopThreads(connections).tls(clientTls).build();
            RpcServer server = EchoService.register(s, RpcServer.builder(s, protocol).options(RpcOptions.DEFAULTS), 1 << 20).bind("127.0.0.1", 0);
            return new Side(name, s, c, server, new RpcClient(c, protocol, RpcOptions.DEFAULTS.withConnectionsPerPeer(connections)));
        }

        @Override
        public void close() {
            client.close();
            server.close();
            clientCtx.close();
            serverCtx.close();
        }
    }

    /** A round with the process CPU it took. */
    private record Measured(RpcBench.Round round, double cpuSecondsPerGb) {
    }

    private static long processCpuNanos() {
        return ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean()).getProcessCpuTime();
    }

    private static Measured round(Side side, int bytes, int streams, Duration d) throws InterruptedException {
        long c0 = processCpuNanos();
        RpcBench.Round r = RpcBench.rpcRound(side.client(), side.server().address(), bytes, streams, d);
        long c1 = processCpuNanos();
        double gb = r.latency().count() * (double) bytes / 1e9;
        return new Measured(r, gb == 0 ? Double.NaN : (c1 - c0) / 1e9 / gb);
    }

    static Map<String, String> run(RpcBench.Options o, PrintStream out) throws Exception {
        Instant now = Instant.now();
        CertificateAuthority ca = CertificateAuthority.generate("bench-ca", now, Duration.ofDays(1));
        out.printf(Locale.ROOT, "%nTLS vs plaintext (mutual TLS 1.3, EC P-256; engines %s; connections %s, each with an event loop per side;"
                + " cpu = this process, both ends, per GB of payload):%n", o.tls(), o.tlsConnections());
        Table t = new Table("payload", "streams", "conns", "system", "GB/s", "req/s", "p50 us", "p99 us", "cpu s/GB", "vs plain");
        Map<String, String> result = new LinkedHashMap<>();
        Map<Integer, Double> firstRatio = new LinkedHashMap<>();
        for (int conns : o.tlsConnections()) {
            List<Side> sides = sides(ca, now, o, conns);
            try {
                for (DataSize size : o.sizes()) {
                    for (int streams : o.streams()) {
                        compare(sides, size, streams, conns, o, t, result, firstRatio);
                    }
                }
            } finally {
                for (int i = sides.size() - 1; i >= 0; i--) {
                    sides.get(i).close();
                }
            }
        }
        t.print(out);
        StringBuilder line = new StringBuilder("result:");
        result.forEach((k, v) -> line.append(' ').append(k).append('=').append(v));
        out.println(line);
        Double first = firstRatio.remove(o.tlsConnections().get(0)); // printed last: the line scripts read
        firstRatio.forEach((conns, r) -> ratioLine("tls_vs_plain_1mib_c" + conns, r, result, out));
        if (first != null) {
            ratioLine("tls_vs_plain_1mib", first, result, out);
        }
        return result;
    }

    private static void ratioLine(String key, double ratio, Map<String, String> result, PrintStream out) {
        result.put(key, Stats.fmt(ratio, 2));
        out.println(key + "=" + Stats.fmt(ratio, 2));
    }

    /** Plaintext first, then one side per engine, each with {@code conns} connections. */
    private static List<Side> sides(CertificateAuthority ca, Instant now, RpcBench.Options o, int conns) throws Exception {
        List<String> hosts = List.of("localhost", "127.0.0.1");
        Protocol protocol = Protocol.of(CoreMessages.TYPES);
        List<Side> sides = new ArrayList<>();
        try {
            sides.add(Side.of("plain", protocol, o, conns, null, null));
            for (TlsEngine e : o.tls()) {
                CertificateAuthority.Issued server = ca.issue("bench-server", hosts, now, Duration.ofDays(1));
                CertificateAuthority.Issued client = ca.issue("bench-client", hosts, now, Duration.ofDays(1));
                sides.add(Side.of("tls-" + e, protocol, o, conns,
                        TlsContext.of(List.of(server.certificate()), server.key(), List.of(ca.certificate()), e),
                        TlsContext.of(List.of(client.certificate()), client.key(), List.of(ca.certificate()), e)));
            }
            return sides;
        } catch (Exception | Error ex) {
            for (int i = sides.size() - 1; i >= 0; i--) {
                sides.get(i).close();
            }
            throw ex;
        }
    }

    /**
     * Rotating rounds of every side at one payload size and stream count; a row each. Keeps the
     * first engine's worst 1 MiB ratio per connection count in {@code firstRatio}.
     */
    private static void compare(List<Side> sides, DataSize size, int streams, int conns, RpcBench.Options o, Table t,
                                Map<String, String> result, Map<Integer, Double> firstRatio) throws InterruptedException {
        int bytes = size.toIntExact();
        for (Side s : sides) {
            round(s, bytes, streams, Duration.ofMillis(500)); // warm-up: JIT, pools, handshakes
        }
        double[][] bps = new double[sides.size()][o.rounds()];
        double[][] rps = new double[sides.size()][o.rounds()];
        double[][] cpu = new double[sides.size()][o.rounds()];
        Stats[] lat = new Stats[sides.size()];
        for (int i = 0; i < sides.size(); i++) {
            lat[i] = new Stats();
        }
        for (int r = 0; r < o.rounds(); r++) {
            for (int k = 0; k < sides.size(); k++) {
                int i = (k + r) % sides.size(); // rotate the order so that no side always goes first
                Measured m = round(sides.get(i), bytes, streams, o.round());
                bps[i][r] = m.round().bytesPerSec();
                rps[i][r] = m.round().reqPerSec();
                cpu[i][r] = m.cpuSecondsPerGb();
                lat[i].addAll(m.round().latency());
            }
        }
        double plain = Stats.median(bps[0]);
        String suffix = "_" + size + "_x" + streams + (conns == 1 ? "" : "_c" + conns);
        for (int i = 0; i < sides.size(); i++) {
            double g = Stats.median(bps[i]);
            double ratio = g / plain;
            String name = sides.get(i).name();
            t.row(size, streams, conns, name, Stats.fmt(g / 1e9, 2), Stats.fmt(Stats.median(rps[i]), 0),
                    Stats.fmt(lat[i].quantileMicros(0.5), 0), Stats.fmt(lat[i].quantileMicros(0.99), 0),
                    Stats.fmt(Stats.median(cpu[i]), 2), Stats.fmt(ratio, 2));
            result.put("cpu_s_per_gb_" + name.replace('-', '_') + suffix, Stats.fmt(Stats.median(cpu[i]), 2));
            if (i > 0) {
                result.put(name.replace('-', '_') + "_vs_plain" + suffix, Stats.fmt(ratio, 2));
            }
            if (i == 1 && size.bytes() == DataSize.ofMiB(1).bytes()) {
                firstRatio.merge(conns, ratio, Math::min);
            }
        }
    }
}
