package io.strata.bench;

import io.strata.protocol.meta.MetaMessages;
import io.strata.core.InodeId;
import io.strata.core.NodeContext;
import io.strata.core.rpc.CoreMessage;
import io.strata.core.rpc.EchoService;
import io.strata.core.rpc.RpcClient;
import io.strata.core.rpc.RpcOptions;
import io.strata.core.rpc.RpcServer;
import io.strata.core.util.Futures;
import io.strata.protocol.meta.Caller;
import io.strata.namespace.ChunkReclaimer;
import io.strata.protocol.meta.DirPage;
import io.strata.protocol.meta.InodeAttrs;
import io.strata.protocol.meta.Meta;
import io.strata.namespace.MetaStore;
import io.strata.namespace.StaticChainTables;
import io.strata.namespace.kv.LmdbKvStore;
import io.strata.protocol.meta.MetaClient;
import io.strata.namespace.service.MetaServer;
import io.strata.namespace.service.MetaService;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Stream;
import org.lmdbjava.ByteArrayProxy;
import org.lmdbjava.Dbi;
import org.lmdbjava.DbiFlags;
import org.lmdbjava.Env;
import org.lmdbjava.EnvFlags;
import org.lmdbjava.Txn;

/**
 * {@code strata bench meta}: metadata operations per second (create, stat, readdir of a large
 * directory, rename, unlink) with 1 and 16 client threads, measured three ways in the same run:
 * <ul>
 *   <li><b>service</b>: through the meta service (a {@link MetaClient} over loopback RPC to a
 *       {@link MetaService} over a {@link MetaStore} on LMDB);</li>
 *   <li><b>direct</b>: the same operations on the same {@link MetaStore} in process, no RPC: the
 *       floor for the service's overhead ({@code service_vs_lmdb} is service / direct);</li>
 *   <li><b>raw lmdb</b> (create and stat only): lmdbjava puts of an inode and an entry key per
 *       write transaction, and gets: the floor of the store itself;</li>
 *   <li><b>rpc only</b> (op "ping"): a ping round trip to the same server over the same client:
 *       the floor of any service call.</li>
 * </ul>
 * Rounds alternate the order of service and direct. A thread runs one operation at a time.
 * CPU per operation (user and kernel) is split by thread group (the client event loop, the
 * server event loop, the meta workers, which also run LMDB commits) to show where the time goes.
 * The machine's load is printed first: on a shared machine, compare rows of one run only. Run with
 * {@code strata bench meta [--threads 1,16] [--round 2s] [--rounds 2] [--entries 100000] [--sync]}.
 * The last line is {@code result: create_per_s=<service, most threads> stat_per_s=<...>
 * service_vs_lmdb=<geometric mean of service/direct over every op and thread count> ...}.
 */
public final class MetaBench {
    public record Options(List<Integer> threads, Duration round, int rounds, int entries, boolean sync, Path dir) {
        public static Options defaults() {
            return new Options(List.of(1, 16), Duration.ofSeconds(2), 2, 100_000, false, null);
        }
    }

    private static final Caller ROOT = Caller.ROOT;
    private static final String[] GROUPS = {"bench-client-net", "bench-meta-net", "bench-meta-meta"};

    private MetaBench() {
    }

    /** One measured phase: operations done, seconds, latencies, CPU ns per thread group. */
    record Phase(long ops, double secs, Stats lat, long[] cpu) {
        double perSec() {
            return ops / Math.max(secs, 1e-9);
        }

        String cpuPerOp(int group) {
            return Stats.fmt(cpu[group] / 1000.0 / Math.max(1, ops), 1);
        }
    }

    @FunctionalInterface
    interface Step {
        /** Runs operation {@code i} of thread {@code t}; returns how many units it did (0: this thread is done). */
        long run(int t, int i) throws Exception;
    }

    static long[] cpu() {
        long[] out = new long[GROUPS.length];
        for (int g = 0; g < GROUPS.length; g++) {
            out[g] = RpcBench.cpuNanos(GROUPS[g]);
        }
        return out;
    }

    /** {@code threads} threads run {@code step} until it returns 0 or {@code d} passes. */
    static Phase phase(int threads, Duration d, Step step) throws InterruptedException {
        Stats lat = new Stats();
        AtomicLong ops = new AtomicLong();
        AtomicReference<Throwable> error = new AtomicReference<>();
        CountDownLatch done = new CountDownLatch(threads);
        long[] c0 = cpu();
        long t0 = System.nanoTime();
        long deadline = t0 + d.toNanos();
        for (int t = 0; t < threads; t++) {
            int tid = t;
            Thread th = new Thread(() -> {
                try {
                    for (int i = 0; System.nanoTime() < deadline && error.get() == null; i++) {
                        long s = System.nanoTime();
                        long n = step.run(tid, i);
                        if (n == 0) {
                            break;
                        }
                        lat.add(System.nanoTime() - s);
                        ops.addAndGet(n);
                    }
                } catch (Throwable e) {
                    error.compareAndSet(null, e);
                } finally {
                    done.countDown();
                }
            }, "bench-worker-" + t);
            th.setDaemon(true);
            th.start();
        }
        done.await();
        double secs = (System.nanoTime() - t0) / 1e9;
        long[] c1 = cpu();
        for (int g = 0; g < c1.length; g++) {
            c1[g] -= c0[g];
        }
        if (error.get() != null) {
            throw new IllegalStateException("benchmark step failed: " + error.get(), error.get());
        }
        return new Phase(ops.get(), secs, lat, c1);
    }

    static <T> T join(java.util.concurrent.CompletableFuture<T> f) {
        return Futures.join(f, Duration.ofSeconds(60));
    }

    /** Runs create, stat, rename, unlink and readdir through {@code m}; returns one phase per op. */
    static Map<String, Phase> workload(Meta m, String label, int threads, Duration d, InodeId bigDir, int entries,
                                       SplittableRandom random) throws InterruptedException {
        Map<String, Phase> out = new LinkedHashMap<>();
        InodeId dir = join(m.mkdirAsync(ROOT, InodeId.ROOT, label + "-" + random.nextLong(1L << 40), 0755, null)).id();
        List<List<InodeAttrs>> files = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            files.add(new ArrayList<>());
        }
        out.put("create", phase(threads, d, (t, i) -> {
            files.get(t).add(join(m.createAsync(ROOT, dir, "t" + t + "-" + i, 0644, true, null)));
            return 1;
        }));
        out.put("stat", phase(threads, d, (t, i) -> {
            List<InodeAttrs> mine = files.get(t);
            join(m.getattrAsync(ROOT, mine.get((int) ((i * 7919L) % mine.size())).id())); // long: i * 7919 passes 2^31 in a fast phase
            return 1;
        }));
        out.put("rename", phase(threads, d.multipliedBy(30), (t, i) -> {
            if (i >= files.get(t).size()) {
                return 0;
            }
            join(m.renameAsync(ROOT, dir, "t" + t + "-" + i, dir, "r" + t + "-" + i, false, null));
            return 1;
        }));
        out.put("unlink", phase(threads, d.multipliedBy(30), (t, i) -> {
            if (i >= files.get(t).size()) {
                return 0;
            }
            join(m.unlinkAsync(ROOT, dir, "r" + t + "-" + i, null));
            return 1;
        }));
        out.put("readdir", phase(threads, d, (t, i) -> {
            long n = 0;
            String after = null;
            do {
                DirPage p = join(m.readdirAsync(ROOT, bigDir, after, 1000, false));
                n += p.entries().size();
                after = p.next();
            } while (after != null);
            if (n != entries) {
                throw new IllegalStateException("listed " + n + " entries, expected " + entries);
            }
            return n;
        }));
        join(m.rmdirAsync(ROOT, InodeId.ROOT, join(m.policyGetAsync(ROOT, dir)).path().substring(1), null));
        return out;
    }

    /** The floor of the store: one write transaction per create (two puts), one read transaction per stat. */
    static Map<String, Phase> rawLmdb(Path dir, int threads, Duration d, boolean sync) throws Exception {
        Files.createDirectories(dir);
        EnvFlags[] flags = sync ? new EnvFlags[] {EnvFlags.MDB_NOTLS} : new EnvFlags[] {EnvFlags.MDB_NOTLS, EnvFlags.MDB_NOSYNC};
        Map<String, Phase> out = new LinkedHashMap<>();
        try (Env<byte[]> env = Env.create(ByteArrayProxy.PROXY_BA).setMapSize(4L << 30).setMaxDbs(1).setMaxReaders(256)
                .open(dir.toFile(), flags)) {
            Dbi<byte[]> db = env.openDbi("raw", DbiFlags.MDB_CREATE);
            byte[] value = new byte[240]; // about the size of a file's inode record
            AtomicLong next = new AtomicLong(1);
            out.put("create", phase(threads, d, (t, i) -> {
                long id = next.getAndIncrement();
                byte[] ik = key("INOD", id);
                try (Txn<byte[]> w = env.txnWrite()) {
                    db.put(w, ik, value);
                    db.put(w, (new String(key("DENT", 7)) + "t" + t + "-" + i).getBytes(), ik);
                    w.commit();
                }
                return 1;
            }));
            long max = next.get() - 1;
            out.put("stat", phase(threads, d, (t, i) -> {
                try (Txn<byte[]> r = env.txnRead()) {
                    if (db.get(r, key("INOD", 1 + (i * 7919L + t) % max)) == null) {
                        throw new IllegalStateException("missing key");
                    }
                }
                return 1;
            }));
        }
        return out;
    }

    private static byte[] key(String prefix, long id) {
        byte[] k = new byte[12];
        System.arraycopy(prefix.getBytes(), 0, k, 0, 4);
        for (int i = 0; i < 8; i++) {
            k[4 + i] = (byte) (id >>> (8 * i));
        }
        return k;
    }

    public static Map<String, String> run(Options o, PrintStream out) throws Exception {
        Path base = o.dir() != null ? o.dir() : Files.createTempDirectory("strata-bench-meta");
        out.printf(Locale.ROOT, "strata bench meta: LMDB in %s (sync=%s), threads %s, %d rounds of %d ms per phase, %d-entry directory, cores=%d, load %.2f%n",
                base, o.sync(), o.threads(), o.rounds(), o.round().toMillis(), o.entries(), Runtime.getRuntime().availableProcessors(),
                java.lang.management.ManagementFactory.getOperatingSystemMXBean().getSystemLoadAverage());
        SplittableRandom random = new SplittableRandom(42);
        // op -> threads -> system -> phases over rounds
        Map<String, Map<Integer, Map<String, List<Phase>>>> all = new LinkedHashMap<>();
        int maxThreads = o.threads().stream().max(Integer::compare).orElse(1);
        try (NodeContext server = NodeContext.builder("bench-meta").eventLoopThreads(1).build();
             NodeContext clientCtx = NodeContext.builder("bench-client").eventLoopThreads(1).build();
             LmdbKvStore kv = LmdbKvStore.open(base.resolve("meta"), new LmdbKvStore.Options(8L << 30, o.sync(), 1024), server.meters());
             MetaStore store = new MetaStore(server, kv, StaticChainTables.uniform(16), ChunkReclaimer.NONE,
                     MetaStore.Options.DEFAULTS.withWorkers(Math.max(8, maxThreads)).withGc(Duration.ZERO, Duration.ZERO));
             RpcServer rpcServer = MetaService.register(EchoService.register(server, RpcServer.builder(server, MetaMessages.PROTOCOL), 1024),
                     store).bind("127.0.0.1", 0);
             RpcClient rpc = new RpcClient(clientCtx, MetaMessages.PROTOCOL, RpcOptions.DEFAULTS)) {
            MetaClient client = new MetaClient(clientCtx, rpc, List.of(rpcServer.address()));
            InodeId big = bigDirectory(store, o.entries());
            // warm up both paths (JIT, connections)
            workload(client, "warm-s", 2, Duration.ofMillis(500), big, o.entries(), random);
            workload(store, "warm-d", 2, Duration.ofMillis(500), big, o.entries(), random);
            for (int threads : o.threads()) {
                for (int r = 0; r < o.rounds(); r++) {
                    boolean serviceFirst = r % 2 == 0;
                    for (int k = 0; k < 2; k++) {
                        boolean service = serviceFirst == (k == 0);
                        Map<String, Phase> ph = workload(service ? client : store, service ? "svc" : "dir", threads, o.round(), big,
                                o.entries(), random);
                        String sys = service ? "service" : "direct";
                        ph.forEach((op, p) -> all.computeIfAbsent(op, x -> new LinkedHashMap<>()).computeIfAbsent(threads, x -> new LinkedHashMap<>())
                                .computeIfAbsent(sys, x -> new ArrayList<>()).add(p));
                    }
                }
                // the RPC layer alone: a ping round trip per operation, the floor of any service call
                for (int r = 0; r < o.rounds(); r++) {
                    Phase ping = phase(threads, o.round(), (t, i) -> {
                        join(rpc.call(rpcServer.address(), new CoreMessage.Ping(i), CoreMessage.Pong.class));
                        return 1;
                    });
                    all.computeIfAbsent("ping", x -> new LinkedHashMap<>()).computeIfAbsent(threads, x -> new LinkedHashMap<>())
                            .computeIfAbsent("rpc only", x -> new ArrayList<>()).add(ping);
                }
                Map<String, Phase> raw = rawLmdb(base.resolve("raw-" + threads), threads, o.round(), o.sync());
                raw.forEach((op, p) -> all.get(op).get(threads).computeIfAbsent("raw lmdb", x -> new ArrayList<>()).add(p));
            }
        } finally {
            if (o.dir() == null) {
                deleteTree(base);
            }
        }
        Table t = new Table("op", "threads", "system", "ops/s", "p50 us", "p99 us", "client net us/op", "server net us/op",
                "meta workers us/op", "vs direct");
        Map<String, String> result = new LinkedHashMap<>();
        double logSum = 0;
        int logN = 0;
        for (var byOp : all.entrySet()) {
            for (var byThreads : byOp.getValue().entrySet()) {
                List<Phase> direct = byThreads.getValue().get("direct");
                double directRate = direct == null ? Double.NaN : median(direct);
                for (var bySys : byThreads.getValue().entrySet()) {
                    List<Phase> ps = bySys.getValue();
                    double rate = median(ps);
                    Phase p = ps.stream().max(Comparator.comparingLong(Phase::ops)).orElseThrow();
                    Stats lat = new Stats();
                    ps.forEach(x -> lat.addAll(x.lat()));
                    String unit = byOp.getKey().equals("readdir") ? " entries" : "";
                    t.row(byOp.getKey(), byThreads.getKey(), bySys.getKey(), Stats.fmt(rate, 0) + unit,
                            Stats.fmt(lat.quantileMicros(0.5), 0), Stats.fmt(lat.quantileMicros(0.99), 0),
                            p.cpuPerOp(0), p.cpuPerOp(1), p.cpuPerOp(2), direct == null ? "" : Stats.fmt(rate / directRate, 2));
                    String key = byOp.getKey() + "_x" + byThreads.getKey();
                    if (bySys.getKey().equals("service")) {
                        result.put(key + "_per_s", Stats.fmt(rate, 0));
                        result.put(key + "_vs_lmdb", Stats.fmt(rate / directRate, 2));
                        logSum += Math.log(rate / directRate);
                        logN++;
                    } else if (bySys.getKey().equals("raw lmdb")) {
                        result.put(key + "_raw_per_s", Stats.fmt(rate, 0));
                    } else if (bySys.getKey().equals("rpc only")) {
                        result.put(key + "_per_s", Stats.fmt(rate, 0));
                    } else {
                        result.put(key + "_direct_per_s", Stats.fmt(rate, 0));
                    }
                }
            }
        }
        t.print(out);
        Map<String, String> head = new LinkedHashMap<>();
        head.put("create_per_s", result.getOrDefault("create_x" + maxThreads + "_per_s", "n/a"));
        head.put("stat_per_s", result.getOrDefault("stat_x" + maxThreads + "_per_s", "n/a"));
        head.put("service_vs_lmdb", logN == 0 ? "n/a" : Stats.fmt(Math.exp(logSum / logN), 2));
        head.putAll(result);
        StringBuilder line = new StringBuilder("result:");
        head.forEach((k, v) -> line.append(' ').append(k).append('=').append(v));
        out.println(line);
        return head;
    }

    private static double median(List<Phase> ps) {
        return Stats.median(ps.stream().mapToDouble(Phase::perSec).toArray());
    }

    /** A directory of {@code n} files, made directly in large batches (it is what readdir reads). */
    private static InodeId bigDirectory(MetaStore store, int n) {
        InodeId dir = join(store.mkdirAsync(ROOT, InodeId.ROOT, "big", 0755, null)).id();
        List<java.util.concurrent.CompletableFuture<InodeAttrs>> inflight = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            inflight.add(store.createAsync(ROOT, dir, String.format("entry-%07d", i), 0644, true, null));
            if (inflight.size() == 256) {
                inflight.forEach(MetaBench::join);
                inflight.clear();
            }
        }
        inflight.forEach(MetaBench::join);
        return dir;
    }

    private static void deleteTree(Path p) throws IOException {
        if (!Files.exists(p)) {
            return;
        }
        try (Stream<Path> s = Files.walk(p)) {
            for (Path x : s.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(x);
            }
        }
    }
}
