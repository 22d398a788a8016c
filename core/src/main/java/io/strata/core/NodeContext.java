package io.strata.core;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.util.concurrent.DefaultThreadFactory;
import io.strata.core.auth.Credentials;
import io.strata.core.auth.TokenVerifier;
import io.strata.core.fault.FaultInjector;
import io.strata.core.rpc.Transport;
import io.strata.core.tls.TlsContext;
import io.strata.core.time.StrataClock;
import io.strata.core.trace.SlowOps;
import java.time.Duration;
import java.util.Optional;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.random.RandomGenerator;

/**
 * The world a component lives in, passed to every component instead of static singletons:
 * clock, seeded randomness, executors, the Netty event loops, the meter registry and the fault
 * injector. One per process in production; a test builds one per simulated node.
 *
 * <p>It also holds the process's place in the cluster's authentication, when it has one: the
 * {@link #credentials()} every RPC client of the process presents, and the
 * {@link #verifier()} every RPC server of the process checks connections with. Without a
 * verifier the servers accept unauthenticated connections (tests, hand-written configs without
 * an {@code [auth]} table).
 *
 * <p>Likewise its {@link #tls()} context: with one, every RPC server of the process speaks only
 * mutual TLS and every RPC client dials with it; without one, both speak plaintext.
 *
 * <p>Executors: {@link #scheduler()} for timers and short tasks, {@link #blocking()} for disk and
 * LMDB work that may block, {@link #eventLoops()} for network I/O only. Never the common pool.
 * The context owns them and shuts them down in {@link #close()}.
 */
public final class NodeContext implements AutoCloseable {
    private final String name;
    private final StrataClock clock;
    private final long seed;
    private final RandomGenerator random;
    private final MeterRegistry meters;
    private final FaultInjector faults;
    private final Transport transport;
    private final ScheduledExecutorService scheduler;
    private final ExecutorService blocking;
    private final EventLoopGroup eventLoops;
    private final Credentials credentials;
    private final TokenVerifier verifier;
    private final TlsContext tls;
    private final SlowOps slowOps;

    private NodeContext(Builder b) {
        this.name = b.name;
        this.clock = b.clock;
        this.seed = b.seed;
        this.random = new Random(b.seed);
        this.meters = b.meters;
        this.faults = b.faults != null ? b.faults : FaultInjector.disabled();
        this.transport = b.transport;
        this.credentials = b.credentials;
        this.verifier = b.verifier;
        this.tls = b.tls;
        this.slowOps = new SlowOps(b.name, b.slowOp, b.clock);
        ScheduledThreadPoolExecutor s = new ScheduledThreadPoolExecutor(
                b.schedulerThreads, named(name + "-sched", true));
        s.setRemoveOnCancelPolicy(true);
        this.scheduler = s;
        this.blocking = Executors.newFixedThreadPool(b.blockingThreads, named(name + "-io", true));
        this.eventLoops = new MultiThreadIoEventLoopGroup(b.eventLoopThreads,
                new DefaultThreadFactory(name + "-net", true), transport.ioHandlerFactory());
    }

    /**
     * A small context named {@code name} whose randomness and fault injector derive from
     * {@code seed} and the name (tests, benchmarks, the in-process cluster harness: each
     * simulated node its own stream, replayable from one seed).
     */
    public static NodeContext seeded(String name, long seed) {
        long nodeSeed = seed ^ name.hashCode() * 0x9E3779B97F4A7C15L;
        return builder(name).seed(nodeSeed).faults(new FaultInjector(nodeSeed)).eventLoopThreads(2).blockingThreads(4).build();
    }

    public static Builder builder(String name) {
        return new Builder(name);
    }

    public String name() {
        return name;
    }

    public StrataClock clock() {
        return clock;
    }

    /** The seed behind {@link #random()}, printed by tests so that a failure can be replayed. */
    public long seed() {
        return seed;
    }

    /** Seeded randomness; thread-safe. */
    public RandomGenerator random() {
        return random;
    }

    public MeterRegistry meters() {
        return meters;
    }

    public FaultInjector faults() {
        return faults;
    }

    public Transport transport() {
        return transport;
    }

    public ScheduledExecutorService scheduler() {
        return scheduler;
    }

    /** The token this process presents on the connections it opens; empty: it presents none. */
    public Optional<Credentials> credentials() {
        return Optional.ofNullable(credentials);
    }

    /** How this process's servers check the tokens they are shown; empty: they accept anyone. */
    public Optional<TokenVerifier> verifier() {
        return Optional.ofNullable(verifier);
    }

    /** The TLS this process's servers require and its clients dial with; empty: plaintext. */
    public Optional<TlsContext> tls() {
        return Optional.ofNullable(tls);
    }

    /** The slow operations this process saw recently (hops of traced user operations). */
    public SlowOps slowOps() {
        return slowOps;
    }

    public ExecutorService blocking() {
        return blocking;
    }

    public EventLoopGroup eventLoops() {
        return eventLoops;
    }

    @Override
    public void close() {
        eventLoops.shutdownGracefully(0, 2, TimeUnit.SECONDS);
        scheduler.shutdownNow();
        blocking.shutdown();
        try {
            blocking.awaitTermination(5, TimeUnit.SECONDS);
            eventLoops.terminationFuture().await(5, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        blocking.shutdownNow();
    }

    private static java.util.concurrent.ThreadFactory named(String prefix, boolean daemon) {
        AtomicInteger n = new AtomicInteger();
        return r -> {
            Thread t = new Thread(r, prefix + "-" + n.incrementAndGet());
            t.setDaemon(daemon);
            return t;
        };
    }

    public static final class Builder {
        private final String name;
        private StrataClock clock = StrataClock.system();
        private long seed = System.nanoTime();
        private MeterRegistry meters = new SimpleMeterRegistry();
        private FaultInjector faults;
        private Transport transport = Transport.resolve("auto");
        private int schedulerThreads = 1;
        private int blockingThreads = Math.max(4, Runtime.getRuntime().availableProcessors() * 2);
        private int eventLoopThreads = Math.max(2, Runtime.getRuntime().availableProcessors());
        private Credentials credentials;
        private TokenVerifier verifier;
        private TlsContext tls;
        private Duration slowOp = SlowOps.DEFAULT_THRESHOLD;

        private Builder(String name) {
            this.name = name;
        }

        public Builder clock(StrataClock clock) {
            this.clock = clock;
            return this;
        }

        public Builder seed(long seed) {
            this.seed = seed;
            return this;
        }

        public Builder meters(MeterRegistry meters) {
            this.meters = meters;
            return this;
        }

        public Builder faults(FaultInjector faults) {
            this.faults = faults;
            return this;
        }

        public Builder transport(Transport transport) {
            this.transport = transport;
            return this;
        }

        /** The token this process's RPC clients present (null: none). */
        public Builder credentials(Credentials credentials) {
            this.credentials = credentials;
            return this;
        }

        /** Makes this process's RPC servers require a token that {@code verifier} accepts (null: they do not). */
        public Builder verifier(TokenVerifier verifier) {
            this.verifier = verifier;
            return this;
        }

        /** Makes this process's RPC servers and clients speak mutual TLS with {@code tls} (null: plaintext). */
        public Builder tls(TlsContext tls) {
            this.tls = tls;
            return this;
        }

        /** Operations at least this long are kept and logged as slow ({@code [node] slow-op}). */
        public Builder slowOp(Duration threshold) {
            this.slowOp = threshold;
            return this;
        }

        public Builder blockingThreads(int n) {
            this.blockingThreads = positive("blockingThreads", n);
            return this;
        }

        public Builder eventLoopThreads(int n) {
            this.eventLoopThreads = positive("eventLoopThreads", n);
            return this;
        }

        public Builder schedulerThreads(int n) {
            this.schedulerThreads = positive("schedulerThreads", n);
            return this;
        }

        public NodeContext build() {
            return new NodeContext(this);
        }

        private static int positive(String what, int n) {
            if (n <= 0) {
                throw new IllegalArgumentException(what + " must be positive, got " + n);
            }
            return n;
        }
    }

    /** A shorthand used in logs and errors. */
    @Override
    public String toString() {
        return "NodeContext[" + name + ", seed=" + seed + ", transport=" + transport + "]";
    }

    /** Convenience for components: schedule on the context's scheduler. */
    public java.util.concurrent.ScheduledFuture<?> schedule(Runnable task, Duration delay) {
        return scheduler.schedule(task, delay.toNanos(), TimeUnit.NANOSECONDS);
    }
}
