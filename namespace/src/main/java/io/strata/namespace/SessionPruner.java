package io.strata.namespace;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.strata.namespace.kv.Bytes;
import io.strata.namespace.kv.KeyValue;
import io.strata.namespace.kv.KvReader;
import io.strata.namespace.kv.Transactor;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Ends the open sessions of clients that stopped keeping them alive (a mount killed with
 * {@code kill -9}, a node that died), as background work on the collector's thread.
 *
 * <p>A client keeps its sessions alive with keep-alives that raise its {@code LEAS} key (an
 * atomic max of the time, from whichever meta instance it reached). A session is expired once
 * {@code lease} has passed since the later of its client's last keep-alive and its own open (a
 * client that never sent one is judged by its sessions' opens alone). A pass reads the
 * {@code SESS} range page by page from snapshots (no conflicts with the opens and closes it walks
 * past), notes the expired sessions, and ends them {@link #BATCH} at a time through
 * {@link NamespaceOps#pruneExpired}, which checks each again in its own transaction: a session
 * closed meanwhile is skipped, and a keep-alive committing meanwhile conflicts with its read of the
 * client's key, so a live client is never pruned on a stale read. Ending a session publishes
 * nothing; an unlinked file whose last session it was goes to the GC queue, and a write session's
 * file that stays is queued for a trim past its length (when {@code trim}). A pass ends at most
 * {@link #MAX_PER_PASS} sessions; the rest wait for the next one. Finally it clears {@code LEAS}
 * keys older than the lease: such a key no longer holds any session back (a session's deadline
 * is the later of the two times plus the lease, and this one has passed), so without it every
 * deadline stays what it was, and a client that comes back raises a new one.
 *
 * <p>Every meta instance may run it; two instances ending the same session both re-check it and
 * one of them does it. Clocks: the deadline compares the pruning instance's clock with times other
 * instances wrote, so their skew adds to (or takes from) the lease.
 *
 * <p>Metrics: {@code strata.meta.sessions.pruned}. One log line per client whose sessions end.
 */
final class SessionPruner {
    private static final Logger LOG = LoggerFactory.getLogger(SessionPruner.class);
    /** Session keys read per snapshot transaction. */
    static final int PAGE = 1000;
    /** Sessions ended per transaction. */
    static final int BATCH = 64;
    /** Most sessions one pass ends. */
    static final int MAX_PER_PASS = 10_000;

    private final Transactor tr;
    private final NamespaceOps ops;
    private final long leaseMillis;
    private final boolean trim;
    private final LongSupplier nowMillis;
    private final Counter pruned;

    /** @param trim whether ended write sessions queue a trim (false: no reclaimer could carry it out, so nothing would fence) */
    SessionPruner(Transactor tr, NamespaceOps ops, Duration lease, boolean trim, LongSupplier nowMillis, MeterRegistry meters) {
        this.tr = tr;
        this.ops = ops;
        this.leaseMillis = lease.toMillis();
        this.trim = trim;
        this.nowMillis = nowMillis;
        this.pruned = Counter.builder("strata.meta.sessions.pruned")
                .description("open sessions ended because their client stopped keeping them alive").register(meters);
    }

    Duration lease() {
        return Duration.ofMillis(leaseMillis);
    }

    /** One pass; returns how many sessions were ended. Runs on the collector's thread (it blocks there). */
    int runOnce() {
        long now = nowMillis.getAsLong();
        Map<Long, Long> lastSeen = new HashMap<>();
        Map<Long, List<NamespaceOps.SessionRef>> endedBy = new LinkedHashMap<>();
        List<NamespaceOps.SessionRef> due = new ArrayList<>();
        int ended = 0;
        byte[] p = KeySpace.SESSION.prefix();
        byte[] from = p;
        while (ended + due.size() < MAX_PER_PASS) {
            byte[] start = from;
            List<KeyValue> page = tr.run(tx -> {
                KvReader r = tx.snapshot();
                List<KeyValue> kvs = r.getRange(start, Bytes.strinc(p), PAGE);
                for (KeyValue kv : kvs) {
                    long client = Bytes.readLe64(kv.value(), 0, 8);
                    if (!lastSeen.containsKey(client)) {
                        byte[] l = r.get(KeySpace.lease(client));
                        lastSeen.put(client, l == null ? 0L : Bytes.readLe64(l));
                    }
                }
                return kvs;
            });
            for (KeyValue kv : page) {
                long client = Bytes.readLe64(kv.value(), 0, 8);
                if (Math.max(lastSeen.get(client), NamespaceOps.openedMillis(kv.value())) + leaseMillis <= now) {
                    due.add(NamespaceOps.SessionRef.of(kv));
                    if (due.size() >= BATCH) {
                        ended += end(due, endedBy);
                        due.clear();
                    }
                }
            }
            if (page.size() < PAGE) {
                break;
            }
            from = Bytes.keyAfter(page.get(page.size() - 1).key());
        }
        if (!due.isEmpty()) {
            ended += end(due, endedBy);
        }
        endedBy.forEach((client, refs) -> LOG.warn("client {} sent no keep-alive for {} ms or more: ended its {} open session(s) on {}"
                + " (nothing they wrote is published)", Long.toHexString(client), leaseMillis, refs.size(),
                refs.stream().map(NamespaceOps.SessionRef::inode).distinct().toList()));
        clearExpiredLeases(now);
        return ended;
    }

    private int end(List<NamespaceOps.SessionRef> batch, Map<Long, List<NamespaceOps.SessionRef>> endedBy) {
        List<NamespaceOps.SessionRef> copy = List.copyOf(batch);
        long now = nowMillis.getAsLong();
        List<NamespaceOps.SessionRef> ended = tr.run(tx -> ops.pruneExpired(new NsTx(tx, false, now * 1_000_000), copy, leaseMillis, now, trim));
        for (NamespaceOps.SessionRef r : ended) {
            endedBy.computeIfAbsent(r.clientId(), c -> new ArrayList<>()).add(r);
        }
        pruned.increment(ended.size());
        return ended.size();
    }

    /** Clears {@code LEAS} keys not raised within the lease, each re-read with a conflict so that a keep-alive meanwhile wins. */
    private void clearExpiredLeases(long now) {
        byte[] p = KeySpace.CLIENT_LEASE.prefix();
        byte[] from = p;
        while (true) {
            byte[] start = from;
            List<KeyValue> page = tr.run(tx -> tx.snapshot().getRange(start, Bytes.strinc(p), PAGE));
            List<byte[]> old = page.stream().filter(kv -> Bytes.readLe64(kv.value()) + leaseMillis <= now).map(KeyValue::key).toList();
            if (!old.isEmpty()) {
                tr.run(tx -> {
                    for (byte[] k : old) {
                        byte[] v = tx.get(k);
                        if (v != null && Bytes.readLe64(v) + leaseMillis <= now) {
                            tx.clear(k);
                        }
                    }
                    return null;
                });
            }
            if (page.size() < PAGE) {
                break;
            }
            from = Bytes.keyAfter(page.get(page.size() - 1).key());
        }
    }
}
