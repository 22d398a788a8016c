package io.strata.l1;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.MeterRegistry;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Supplier;
import java.util.function.ToDoubleFunction;

/**
 * The L1 cache's meters, all tagged {@code cache=<name>} and removed from the registry at close
 * (so a cache reopened in the same process registers fresh gauges):
 * <ul>
 * <li>{@code strata.l1.hits{tier=memory|nvme|below}}: blocks served by each tier;
 *     {@code strata.l1.misses{tier=memory|nvme|below}}: lookups a tier could not serve (for
 *     {@code below}: failed fetches); {@code strata.l1.read.bytes{tier}}: bytes served (whole blocks; a small read's NVMe hit counts the
 *     sub-range it returned).</li>
 * <li>{@code strata.l1.cached.bytes{tier=memory|nvme}}, {@code strata.l1.cached.blocks{tier}},
 *     {@code strata.l1.pinned.bytes}: what is held now.</li>
 * <li>{@code strata.l1.evictions{tier, cause=size|expired|disk-floor|corrupt}};
 *     {@code strata.l1.nvme.refused{reason=admission|capacity|disk-floor|queue-full|write-error}};
 *     {@code strata.l1.corruptions{kind=crc|missing|short|io}}: NVMe blocks dropped on read.</li>
 * <li>{@code strata.l1.writeback.queue.bytes}, {@code .queue.writes}, {@code .queue.files},
 *     {@code .oldest.age} (seconds); counters {@code strata.l1.writeback.absorbed.bytes},
 *     {@code .flushed.bytes}, {@code .flushes}, {@code .failures} (failed flush attempts).</li>
 * <li>{@code strata.l1.bypass}: reads and writes of strict files that skipped the cache.</li>
 * <li>{@code strata.l1.range.reads}: small reads that missed and fetched only their bytes from
 *     below (also counted as {@code hits{tier=below}} with those bytes), see
 *     {@link L1Config.SmallMiss}.</li>
 * <li>{@code strata.l1.written.kept.bytes}: bytes of files this node's client wrote and published,
 *     put in memory as the file's new data version ({@link io.strata.core.tier.WrittenContent}).</li>
 * </ul>
 */
final class L1Metrics implements AutoCloseable {
    enum Tier {
        MEMORY, NVME, BELOW;

        String tag() {
            return name().toLowerCase(java.util.Locale.ROOT);
        }
    }

    private final MeterRegistry registry;
    private final String cache;
    private final List<Meter> meters = new ArrayList<>();
    private final Counter[] hits = new Counter[3];
    private final Counter[] misses = new Counter[3];
    private final Counter[] readBytes = new Counter[3];
    private final Map<String, Counter> dynamic = new ConcurrentHashMap<>();
    final Counter bypass;
    final Counter rangeReads;
    final Counter absorbedBytes;
    final Counter flushedBytes;
    final Counter flushes;
    final Counter flushFailures;
    final Counter keptWrittenBytes;

    L1Metrics(MeterRegistry registry, String cache) {
        this.registry = registry;
        this.cache = cache;
        for (Tier t : Tier.values()) {
            hits[t.ordinal()] = counter("strata.l1.hits", "blocks served by this tier", "tier", t.tag());
            misses[t.ordinal()] = counter("strata.l1.misses", "block lookups this tier could not serve", "tier", t.tag());
            readBytes[t.ordinal()] = counter("strata.l1.read.bytes", "bytes of blocks served by this tier", "tier", t.tag());
        }
        bypass = counter("strata.l1.bypass", "reads and writes of strict files, which skip the cache");
        rangeReads = counter("strata.l1.range.reads", "small reads that missed and fetched only their bytes from below");
        absorbedBytes = counter("strata.l1.writeback.absorbed.bytes", "bytes of small writes absorbed by write-back");
        flushedBytes = counter("strata.l1.writeback.flushed.bytes", "absorbed bytes written to the tier below");
        flushes = counter("strata.l1.writeback.flushes", "writes sent to the tier below by write-back (after coalescing)");
        flushFailures = counter("strata.l1.writeback.failures", "failed write-back flush attempts (retried; kept until they succeed)");
        keptWrittenBytes = counter("strata.l1.written.kept.bytes", "bytes of files this node wrote and published, cached as their new version");
    }

    private Counter counter(String name, String help, String... tags) {
        Counter c = Counter.builder(name).description(help).tags(tags).tag("cache", cache).register(registry);
        synchronized (meters) {
            meters.add(c);
        }
        return c;
    }

    <T> void gauge(String name, String help, T obj, ToDoubleFunction<T> f, String... tags) {
        Gauge g = Gauge.builder(name, obj, f).description(help).tags(tags).tag("cache", cache).strongReference(true).register(registry);
        synchronized (meters) {
            meters.add(g);
        }
    }

    void gauge(String name, String help, Supplier<Number> f, String... tags) {
        gauge(name, help, f, s -> s.get().doubleValue(), tags);
    }

    void hit(Tier t, long bytes) {
        hits[t.ordinal()].increment();
        readBytes[t.ordinal()].increment(bytes);
    }

    void miss(Tier t) {
        misses[t.ordinal()].increment();
    }

    double hits(Tier t) {
        return hits[t.ordinal()].count();
    }

    double misses(Tier t) {
        return misses[t.ordinal()].count();
    }

    void eviction(Tier t, String cause, long n) {
        dyn("strata.l1.evictions", "blocks evicted", "tier", t.tag(), "cause", cause).increment(n);
    }

    void refused(String reason) {
        dyn("strata.l1.nvme.refused", "blocks not written to the NVMe tier", "reason", reason).increment();
    }

    void corruption(String kind) {
        dyn("strata.l1.corruptions", "NVMe blocks dropped on read (bad CRC32C, missing or short file, I/O error)", "kind", kind).increment();
    }

    /** Blocks evicted from {@code t} so far, whatever the cause. */
    double evictions(Tier t) {
        String prefix = "strata.l1.evictions" + "tier," + t.tag() + ",";
        double n = 0;
        for (var e : dynamic.entrySet()) {
            if (e.getKey().startsWith(prefix)) {
                n += e.getValue().count();
            }
        }
        return n;
    }

    double count(String name, String... tags) {
        Counter c = dynamic.get(name + String.join(",", tags));
        return c == null ? 0 : c.count();
    }

    private Counter dyn(String name, String help, String... tags) {
        return dynamic.computeIfAbsent(name + String.join(",", tags), k -> counter(name, help, tags));
    }

    @Override
    public void close() {
        synchronized (meters) {
            for (Meter m : meters) {
                registry.remove(m);
            }
            meters.clear();
        }
        dynamic.clear();
    }
}
