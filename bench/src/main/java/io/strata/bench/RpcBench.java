package io.strata.bench;

import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.channel.socket.SocketChannel;
import io.netty.handler.codec.FixedLengthFrameDecoder;
import io.netty.handler.codec.LengthFieldBasedFrameDecoder;
import io.strata.core.DataSize;
import io.strata.core.NodeContext;
import io.strata.core.rpc.CoreMessage;
import io.strata.core.rpc.CoreMessages;
import io.strata.core.rpc.EchoService;
import io.strata.core.rpc.Payload;
import io.strata.core.rpc.Protocol;
import io.strata.core.rpc.RpcClient;
import io.strata.core.rpc.RpcOptions;
import io.strata.core.rpc.RpcServer;
import io.strata.core.rpc.Transport;
import io.strata.core.tls.TlsEngine;
import java.io.IOException;
import java.io.PrintStream;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * {@code strata bench rpc}: bulk transfer between two RPC endpoints on loopback, next to the
 * same transfer over raw Netty (length-prefixed frames and an 8-byte ack each, same event
 * loops, same number of requests in flight) and, when installed, iperf3.
 *
 * <p>Each case (payload size x streams) runs {@code rounds} alternating rounds of RPC and raw
 * Netty so that both see the same machine noise; the table shows the median round. A stream
 * keeps one request in flight and sends the next when the answer arrives. Run with
 * {@code strata bench rpc [--sizes 1MiB,64KiB] [--streams 1,8] [--round 2s] [--rounds 3]}.
 * The {@code result:} line reads {@code rpc_vs_netty=<worst 1 MiB ratio> ...}.
 *
 * <p>Then the same RPC exchange over mutual TLS ({@link TlsBench}), side by side with plaintext,
 * per engine of {@code --tls} (BoringSSL and/or the JDK's), with the process's CPU seconds per
 * GB moved; its last line is {@code tls_vs_plain_1mib=<worst 1 MiB ratio of the first engine>}.
 */
public final class RpcBench {
    /**
     * {@code tls}: the engines to run the TLS comparison with (empty: none); {@code tlsConnections}:
     * the connection counts it runs with (each also the number of event loops per side).
     */
    public record Options(List<DataSize> sizes, List<Integer> streams, Duration round, int rounds,
                          Transport transport, boolean iperf, List<TlsEngine> tls, List<Integer> tlsConnections) {
        public static Options defaults() {
            return new Options(List.of(DataSize.ofMiB(1), DataSize.ofKiB(64)), List.of(1, 8), Duration.ofSeconds(2), 3,
                    Transport.resolve("auto"), true, List.of(TlsEngine.resolve("auto")), List.of(1));
        }
    }

    /** One measured round: bytes/s, requests/s, latency samples, CPU per request of each side's event loop. */
    record Round(double bytesPerSec, double reqPerSec, Stats latency, double serverCpuMicros, double clientCpuMicros) {
    }

    /** CPU time (ns) used so far by the threads whose names start with {@code prefix}. */
    static long cpuNanos(String prefix) {
        java.lang.management.ThreadMXBean mx = java.lang.management.ManagementFactory.getThreadMXBean();
        long sum = 0;
        for (Thread t : Thread.getAllStackTraces().keySet()) {
            if (t.getName().startsWith(prefix)) {
                long c = mx.getThreadCpuTime(t.threadId());
                sum += Math.max(0, c);
            }
        }
        return sum;
    }

    /** Runs {@code body} and returns its round with the loops' CPU per request filled in. */
    static Round measured(java.util.concurrent.Callable<Round> body) throws Exception {
        long s0 = cpuNanos("bench-server-net");
        long c0 = cpuNanos("bench-client-net");
        Round r = body.call();
        long s1 = cpuNanos("bench-server-net");
        long c1 = cpuNanos("bench-client-net");
        double n = Math.max(1, r.latency().count());
        return new Round(r.bytesPerSec(), r.reqPerSec(), r.latency(), (s1 - s0) / n / 1000.0, (c1 - c0) / n / 1000.0);
    }

    private RpcBench() {
    }

    public static Map<String, String> run(Options o, PrintStream out) throws Exception {
        out.printf(Locale.ROOT, "strata bench rpc: transport=%s, %d rounds of %d ms per case, cores=%d%n",
                o.transport().name().toLowerCase(Locale.ROOT), o.rounds(), o.round().toMillis(),
                Runtime.getRuntime().availableProcessors());
        Map<String, String> result = new LinkedHashMap<>();
        Table t = new Table("payload", "streams", "system", "GB/s", "req/s", "p50 us", "p99 us",
                "client cpu us/req", "server cpu us/req", "vs netty");
        double worst1MiB = Double.MAX_VALUE;
        double best1MiB = 0;
        try (NodeContext serverCtx = NodeContext.builder("bench-server").transport(o.transport()).eventLoopThreads(1).build();
             NodeContext clientCtx = NodeContext.builder("bench-client").transport(o.transport()).eventLoopThreads(1).build()) {
            Protocol protocol = Protocol.of(CoreMessages.TYPES);
            RpcOptions rpcOptions = RpcOptions.DEFAULTS;
            try (RpcServer server = EchoService.register(serverCtx, RpcServer.builder(serverCtx, protocol).options(rpcOptions), 1 << 20)
                         .bind("127.0.0.1", 0);
                 RpcClient client = new RpcClient(clientCtx, protocol, rpcOptions);
                 RawNetty raw = new RawNetty(serverCtx, clientCtx)) {
                for (DataSize size : o.sizes()) {
                    for (int streams : o.streams()) {
                        int bytes = size.toIntExact();
                        // warm up both paths (JIT, pools, connections)
                        rpcRound(client, server.address(), bytes, streams, Duration.ofMillis(500));
                        raw.round(bytes, streams, Duration.ofMillis(500));
                        double[] rpcBps = new double[o.rounds()];
                        double[] rawBps = new double[o.rounds()];
                        double[] rpcRps = new double[o.rounds()];
                        double[] rawRps = new double[o.rounds()];
                        Stats rpcLat = new Stats();
                        Stats rawLat = new Stats();
                        double[] rpcCpu = new double[2];
                        double[] rawCpu = new double[2];
                        for (int r = 0; r < o.rounds(); r++) {
                            // alternate which goes first, so neither always inherits the other's garbage
                            Round a;
                            Round b;
                            if (r % 2 == 0) {
                                a = measured(() -> rpcRound(client, server.address(), bytes, streams, o.round()));
                                b = measured(() -> raw.round(bytes, streams, o.round()));
                            } else {
                                b = measured(() -> raw.round(bytes, streams, o.round()));
                                a = measured(() -> rpcRound(client, server.address(), bytes, streams, o.round()));
                            }
                            rpcCpu[0] += a.serverCpuMicros() / o.rounds();
                            rpcCpu[1] += a.clientCpuMicros() / o.rounds();
                            rawCpu[0] += b.serverCpuMicros() / o.rounds();
                            rawCpu[1] += b.clientCpuMicros() / o.rounds();
                            rpcBps[r] = a.bytesPerSec();
                            rpcRps[r] = a.reqPerSec();
                            rawBps[r] = b.bytesPerSec();
                            rawRps[r] = b.reqPerSec();
                            rpcLat.addAll(a.latency());
                            rawLat.addAll(b.latency());
                        }
                        double rpc = Stats.median(rpcBps);
                        double net = Stats.median(rawBps);
                        double ratio = rpc / net;
                        t.row(size, streams, "strata rpc", Stats.fmt(rpc / 1e9, 2), Stats.fmt(Stats.median(rpcRps), 0),
                                Stats.fmt(rpcLat.quantileMicros(0.5), 0), Stats.fmt(rpcLat.quantileMicros(0.99), 0),
                                Stats.fmt(rpcCpu[1], 0), Stats.fmt(rpcCpu[0], 0), Stats.fmt(ratio, 2));
                        t.row(size, streams, "raw netty", Stats.fmt(net / 1e9, 2), Stats.fmt(Stats.median(rawRps), 0),
                                Stats.fmt(rawLat.quantileMicros(0.5), 0), Stats.fmt(rawLat.quantileMicros(0.99), 0),
                                Stats.fmt(rawCpu[1], 0), Stats.fmt(rawCpu[0], 0), "1.00");
                        String key = size + "_x" + streams;
                        result.put("rpc_vs_netty_" + key, Stats.fmt(ratio, 2));
                        result.put("gbps_" + key, Stats.fmt(rpc / 1e9, 2));
                        if (size.bytes() == DataSize.ofMiB(1).bytes()) {
                            worst1MiB = Math.min(worst1MiB, ratio);
                            best1MiB = Math.max(best1MiB, rpc);
                        }
                    }
                }
            }
        }
        if (o.iperf()) {
            for (int streams : o.streams()) {
                String gbps = iperf3(streams, o.round().multipliedBy(Math.max(1, o.rounds())));
                t.row("tcp", streams, "iperf3", gbps);
                result.put("iperf_gbps_x" + streams, gbps);
            }
        }
        t.print(out);
        Map<String, String> head = new LinkedHashMap<>();
        if (worst1MiB != Double.MAX_VALUE) {
            head.put("rpc_vs_netty", Stats.fmt(worst1MiB, 2));
            head.put("gbps", Stats.fmt(best1MiB / 1e9, 2));
        }
        head.putAll(result);
        StringBuilder line = new StringBuilder("result:");
        head.forEach((k, v) -> line.append(' ').append(k).append('=').append(v));
        out.println(line);
        if (!o.tls().isEmpty()) {
            head.putAll(TlsBench.run(o, out));
        }
        return head;
    }

    /** {@code streams} callers each keep one Echo with a {@code size}-byte payload in flight. */
    static Round rpcRound(RpcClient client, InetSocketAddress server, int size, int streams, Duration d) throws InterruptedException {
        AtomicBoolean stop = new AtomicBoolean();
        AtomicLong done = new AtomicLong();
        Stats lat = new Stats();
        CountDownLatch finished = new CountDownLatch(streams);
        List<ByteBuf> buffers = new ArrayList<>();
        long t0 = System.nanoTime();
        for (int s = 0; s < streams; s++) {
            ByteBuf data = PooledByteBufAllocator.DEFAULT.directBuffer(size);
            EchoService.fill(data, size, s);
            buffers.add(data);
            new Object() {
                void next() {
                    if (stop.get()) {
                        finished.countDown();
                        return;
                    }
                    long start = System.nanoTime();
                    client.call(server, new CoreMessage.Echo(0), Payload.of(data.retainedDuplicate()), Duration.ofSeconds(30))
                            .whenComplete((r, e) -> {
                                if (e != null) {
                                    stop.set(true);
                                    finished.countDown();
                                    return;
                                }
                                r.close();
                                lat.add(System.nanoTime() - start);
                                done.incrementAndGet();
                                next();
                            });
                }
            }.next();
        }
        Thread.sleep(d.toMillis());
        stop.set(true);
        finished.await(30, TimeUnit.SECONDS);
        double secs = (System.nanoTime() - t0) / 1e9;
        buffers.forEach(ByteBuf::release);
        return new Round(done.get() * (double) size / secs, done.get() / secs, lat, 0, 0);
    }

    /** The baseline: the same exchange over plain Netty handlers, no RPC layer. */
    static final class RawNetty implements AutoCloseable {
        private final Channel server;
        private final Channel client;
        private final ArrayDeque<Runnable> acks = new ArrayDeque<>(); // touched on the client loop only

        RawNetty(NodeContext serverCtx, NodeContext clientCtx) throws InterruptedException {
            server = new ServerBootstrap().group(serverCtx.eventLoops()).channel(serverCtx.transport().serverChannel())
                    .childOption(ChannelOption.TCP_NODELAY, true)
                    .childHandler(new ChannelInitializer<SocketChannel>() {
                        @Override
                        protected void initChannel(SocketChannel ch) {
                            ch.pipeline().addLast(new LengthFieldBasedFrameDecoder(Integer.MAX_VALUE, 0, 4, 0, 4),
                                    new SimpleChannelInboundHandler<ByteBuf>() {
                                        @Override
                                        protected void channelRead0(ChannelHandlerContext ctx, ByteBuf msg) {
                                            ByteBuf ack = ctx.alloc().buffer(8).writeLong(msg.readableBytes());
                                            ctx.writeAndFlush(ack, ctx.voidPromise());
                                        }
                                    });
                        }
                    }).bind("127.0.0.1", 0).sync().channel();
            client = new Bootstrap().group(clientCtx.eventLoops()).channel(clientCtx.transport().socketChannel())
                    .option(ChannelOption.TCP_NODELAY, true)
                    .handler(new ChannelInitializer<SocketChannel>() {
                        @Override
                        protected void initChannel(SocketChannel ch) {
                            ch.pipeline().addLast(new FixedLengthFrameDecoder(8), new SimpleChannelInboundHandler<ByteBuf>() {
                                @Override
                                protected void channelRead0(ChannelHandlerContext ctx, ByteBuf msg) {
                                    acks.poll().run();
                                }
                            });
                        }
                    }).connect(server.localAddress()).sync().channel();
        }

        Round round(int size, int streams, Duration d) throws InterruptedException {
            AtomicBoolean stop = new AtomicBoolean();
            AtomicLong done = new AtomicLong();
            Stats lat = new Stats();
            CountDownLatch finished = new CountDownLatch(streams);
            List<ByteBuf> buffers = new ArrayList<>();
            long t0 = System.nanoTime();
            for (int s = 0; s < streams; s++) {
                ByteBuf data = PooledByteBufAllocator.DEFAULT.directBuffer(size);
                EchoService.fill(data, size, s);
                buffers.add(data);
                new Object() {
                    void next() {
                        if (stop.get()) {
                            finished.countDown();
                            return;
                        }
                        long start = System.nanoTime();
                        client.eventLoop().execute(() -> {
                            acks.add(() -> {
                                lat.add(System.nanoTime() - start);
                                done.incrementAndGet();
                                next();
                            });
                            client.write(client.alloc().buffer(4).writeInt(size), client.voidPromise());
                            client.writeAndFlush(data.retainedDuplicate(), client.voidPromise());
                        });
                    }
                }.next();
            }
            Thread.sleep(d.toMillis());
            stop.set(true);
            finished.await(30, TimeUnit.SECONDS);
            double secs = (System.nanoTime() - t0) / 1e9;
            buffers.forEach(ByteBuf::release);
            return new Round(done.get() * (double) size / secs, done.get() / secs, lat, 0, 0);
        }

        @Override
        public void close() {
            client.close().syncUninterruptibly();
            server.close().syncUninterruptibly();
        }
    }

    /** iperf3 over loopback with {@code streams} parallel streams, in GB/s; "n/a" when not installed. */
    static String iperf3(int streams, Duration d) {
        int port;
        try (ServerSocket s = new ServerSocket(0)) {
            port = s.getLocalPort();
        } catch (IOException e) {
            return "n/a";
        }
        Process server = null;
        try {
            server = new ProcessBuilder("iperf3", "-s", "-1", "-p", String.valueOf(port)).redirectErrorStream(true)
                    .redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
            Thread.sleep(300);
            Process c = new ProcessBuilder("iperf3", "-c", "127.0.0.1", "-p", String.valueOf(port), "-J",
                    "-P", String.valueOf(streams), "-t", String.valueOf(Math.max(1, d.toSeconds()))).redirectErrorStream(true).start();
            String json = new String(c.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            c.waitFor(d.toSeconds() + 30, TimeUnit.SECONDS);
            Matcher m = Pattern.compile("\"sum_received\"\\s*:\\s*\\{[^}]*?\"bits_per_second\"\\s*:\\s*([0-9.eE+]+)").matcher(json);
            return m.find() ? Stats.fmt(Double.parseDouble(m.group(1)) / 8e9, 2) : "n/a";
        } catch (IOException e) {
            return "n/a"; // not installed
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return "n/a";
        } finally {
            if (server != null) {
                server.destroyForcibly();
            }
        }
    }
}
