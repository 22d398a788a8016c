package io.strata.namespace;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import io.strata.config.policy.Policy;
import io.strata.core.InodeId;
import io.strata.namespace.kv.Bytes;
import io.strata.namespace.kv.KeyValue;
import io.strata.namespace.kv.Transactor;
import io.strata.protocol.meta.Caller;
import io.strata.protocol.meta.Checkpoint.Durability;
import io.strata.protocol.meta.Checkpoint.Generation;
import io.strata.protocol.meta.Checkpoint.State;
import io.strata.protocol.meta.InodeAttrs;
import io.strata.protocol.meta.InodeType;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The checkpoint roots' background work, one pass at a time on the meta's collector thread
 * (docs/checkpoints.md, "Retention"). For every root:
 * <ul>
 *   <li><b>Durability.</b> A committed generation not yet durable in L3 is looked at again: its
 *       files' staging records say whether it is staged, draining or durable, and the first time
 *       of each is kept.</li>
 *   <li><b>Retention.</b> Once a generation is durable in L3, committed generations older than
 *       it are removed unless they are among the root's {@code checkpoint.keep-last} newest, are
 *       every {@code checkpoint.keep-every}-th, are pinned, or have a file open (being restored).</li>
 *   <li><b>Partial generations.</b> A generation never committed is removed once it is older than
 *       {@code checkpoint.grace} and no file under it is open.</li>
 * </ul>
 * Removal first withdraws the generation (it stops being committed, so {@code latest} moves to
 * the one before), then deletes its tree a batch of entries per transaction; files a reader still
 * has open stay readable until closed, as after any unlink.
 *
 * <p>Metrics: {@code strata.ckpt.removed{why=retention|partial}}, and
 * {@code strata.ckpt.reached{level=committed|l2|l3}}: the seconds from a generation's first write
 * to its commit and to its durability in L2 and in L3, recorded once as it reaches each (at the
 * commit, or by the pass that sees it).
 */
final class CheckpointKeeper {
    private static final Logger LOG = LoggerFactory.getLogger(CheckpointKeeper.class);
    /** Entries one removal transaction deletes. */
    static final int REMOVE_BATCH = 256;

    private final Transactor tr;
    private final NamespaceOps ops;
    private final LongSupplier nowMillis;
    private final LongSupplier nowNanos;
    private final Counter retired;
    private final Counter partial;
    private final Timer toCommit;
    private final Timer toL2;
    private final Timer toL3;
    /** Generations the current pass saw reach a level: (before, after), recorded once its transaction committed. */
    private final List<Generation[]> reachedInPass = new ArrayList<>();

    CheckpointKeeper(Transactor tr, NamespaceOps ops, LongSupplier nowMillis, LongSupplier nowNanos, MeterRegistry meters) {
        this.tr = tr;
        this.ops = ops;
        this.nowMillis = nowMillis;
        this.nowNanos = nowNanos;
        this.retired = Counter.builder("strata.ckpt.removed").tag("why", "retention").register(meters);
        this.partial = Counter.builder("strata.ckpt.removed").tag("why", "partial").register(meters);
        this.toCommit = reachedTimer(meters, "committed");
        this.toL2 = reachedTimer(meters, "l2");
        this.toL3 = reachedTimer(meters, "l3");
    }

    private static Timer reachedTimer(MeterRegistry meters, String level) {
        return Timer.builder("strata.ckpt.reached").tag("level", level)
                .description("time from a checkpoint generation's first write to its commit (committed) or its durability in L2 or L3")
                .register(meters);
    }

    /**
     * Records the levels {@code after} reached that {@code before} (null: a generation just
     * committed) had not, each as the time from the generation's first write.
     */
    void reached(Generation before, Generation after) {
        if (!after.committed()) {
            return;
        }
        if (before == null || !before.committed()) {
            record(toCommit, after, after.committedMillis());
        }
        if (after.l2Millis() != 0 && (before == null || before.l2Millis() == 0)) {
            record(toL2, after, after.l2Millis());
        }
        if (after.l3Millis() != 0 && (before == null || before.l3Millis() == 0)) {
            record(toL3, after, after.l3Millis());
        }
    }

    private static void record(Timer t, Generation g, long atMillis) {
        t.record(Math.max(0, atMillis - g.startedMillis()), TimeUnit.MILLISECONDS);
    }

    /** One pass over every root; returns the generations it removed. */
    int runOnce() {
        List<InodeId> roots = tr.run(tx -> CheckpointOps.roots(new NsTx(tx, true, nowNanos.getAsLong())));
        int removed = 0;
        for (InodeId root : roots) {
            List<Generation> doomed = tr.run(tx -> {
                reachedInPass.clear(); // a retried transaction sees them again
                return keep(new NsTx(tx, false, nowNanos.getAsLong()), root, nowMillis.getAsLong());
            });
            for (Generation[] r : reachedInPass) {
                reached(r[0], r[1]);
            }
            reachedInPass.clear();
            for (Generation g : doomed) {
                remove(g);
                removed++;
            }
        }
        return removed;
    }

    /** Updates {@code root}'s records; returns the generations to remove (already withdrawn). */
    private List<Generation> keep(NsTx t, InodeId root, long now) {
        InodeAttrs r = t.inode(root);
        if (!CheckpointOps.isRoot(r)) {
            t.tx.clear(KeySpace.under(KeySpace.CHECKPOINT_ROOT, root)); // removed, or no longer a root
            return List.of();
        }
        Policy policy = ops.effectivePolicy(t, r).policy();
        List<Generation> records = new ArrayList<>();
        Set<InodeId> known = new HashSet<>();
        for (Generation g : CheckpointOps.records(t, root)) {
            InodeAttrs dir = t.inode(g.dir());
            if (dir == null || !root.equals(dir.parent())) {
                CheckpointOps.forget(t, g); // its directory is gone (or moved away)
                continue;
            }
            known.add(g.dir());
            if (g.committed() && g.l3Millis() == 0) {
                Generation seen = CheckpointOps.withProgress(t, g);
                if (!seen.equals(g)) {
                    CheckpointOps.put(t, seen);
                    reachedInPass.add(new Generation[]{g, seen});
                    g = seen;
                }
            }
            records.add(g);
        }
        // directories made before the root was one (or while the meta was older) are generations too
        byte[] p = KeySpace.under(KeySpace.DENTRY, root);
        for (KeyValue kv : t.reader.getRange(p, Bytes.strinc(p), 0)) {
            InodeId child = InodeId.of(Bytes.readLe64(kv.value(), 0, 8));
            if (!known.contains(child) && NsTx.typeOf(kv.value()[8]) == InodeType.DIRECTORY) {
                Generation g = new Generation(root, child, KeySpace.nameAt(kv.key()), State.WRITING, Durability.NONE, null, 0, 0, 0, 0,
                        false, now, 0, 0, 0, 0);
                CheckpointOps.put(t, g);
                records.add(g);
            }
        }
        List<Generation> doomed = new ArrayList<>();
        long newestDurable = 0;
        List<Generation> committed = new ArrayList<>();
        for (Generation g : records) {
            if (g.committed()) {
                committed.add(g);
                if (g.durability() == Durability.L3) {
                    newestDurable = Math.max(newestDurable, g.seq());
                }
            }
        }
        int keepFrom = Math.max(0, committed.size() - policy.keepLast()); // records() sorts committed ones by seq
        for (int i = 0; i < keepFrom; i++) {
            Generation g = committed.get(i);
            boolean kept = g.pinned() || g.seq() >= newestDurable || (policy.keepEvery() > 0 && g.seq() % policy.keepEvery() == 0);
            if (!kept && !anyOpen(t, g.dir())) {
                doomed.add(withdraw(t, g));
                retired.increment();
            }
        }
        long graceMillis = policy.grace().toMillis();
        for (Generation g : records) {
            if (g.state() == State.WRITING && g.startedMillis() + graceMillis <= now && !anyOpen(t, g.dir())) {
                LOG.info("checkpoint root {}: generation \"{}\" was not committed within {} and no writer is left: removing it", root,
                        g.name(), policy.grace());
                doomed.add(withdraw(t, g));
                partial.increment();
            } else if (g.state() == State.REMOVING) {
                doomed.add(g); // withdrawn by a user's removal, or a removal that a restart interrupted
            }
        }
        return doomed;
    }

    private static Generation withdraw(NsTx t, Generation g) {
        Generation w = g.with(State.REMOVING, g.durability());
        CheckpointOps.put(t, w);
        return w;
    }

    /** Whether any file under {@code dir} has an open session (a writer, or a reader restoring it). */
    private static boolean anyOpen(NsTx t, InodeId dir) {
        List<InodeId> todo = new ArrayList<>(List.of(dir));
        while (!todo.isEmpty()) {
            InodeId d = todo.remove(todo.size() - 1);
            byte[] p = KeySpace.under(KeySpace.DENTRY, d);
            for (KeyValue kv : t.reader.getRange(p, Bytes.strinc(p), 0)) {
                InodeId child = InodeId.of(Bytes.readLe64(kv.value(), 0, 8));
                InodeType type = NsTx.typeOf(kv.value()[8]);
                if (type == InodeType.DIRECTORY) {
                    todo.add(child);
                } else if (type == InodeType.FILE && t.hasSessions(child)) {
                    return true;
                }
            }
        }
        return false;
    }

    /** Deletes a withdrawn generation's tree, a batch per transaction: files, then directories once empty, then the record. */
    private void remove(Generation g) {
        for (int round = 0; round < 1_000_000; round++) {
            boolean done = tr.run(tx -> removeBatch(new NsTx(tx, false, nowNanos.getAsLong()), g, nowMillis.getAsLong()));
            if (done) {
                LOG.info("checkpoint root {}: removed generation \"{}\" (seq {})", g.root(), g.name(), g.seq());
                return;
            }
        }
    }

    private boolean removeBatch(NsTx t, Generation g, long now) {
        Generation rec = CheckpointOps.record(t, g.root(), g.dir());
        if (rec == null || rec.state() != State.REMOVING) {
            return true;
        }
        InodeAttrs dir = t.inode(g.dir());
        if (dir == null || !g.root().equals(dir.parent())) {
            CheckpointOps.forget(t, rec);
            return true;
        }
        int budget = REMOVE_BATCH;
        List<InodeId> todo = new ArrayList<>(List.of(g.dir()));
        boolean genEmpty = true;
        while (!todo.isEmpty() && budget > 0) {
            InodeId d = todo.remove(todo.size() - 1);
            byte[] p = KeySpace.under(KeySpace.DENTRY, d);
            for (KeyValue kv : t.reader.getRange(p, Bytes.strinc(p), 0)) {
                if (d.equals(g.dir())) {
                    genEmpty = false;
                }
                if (budget <= 0) {
                    break;
                }
                String name = KeySpace.nameAt(kv.key());
                InodeId child = InodeId.of(Bytes.readLe64(kv.value(), 0, 8));
                if (NsTx.typeOf(kv.value()[8]) == InodeType.DIRECTORY) {
                    if (t.isEmptyDir(child)) {
                        ops.rmdir(t, Caller.ROOT, d, name);
                        budget--;
                    } else {
                        todo.add(child);
                    }
                } else {
                    ops.unlink(t, Caller.ROOT, d, name, now);
                    budget--;
                }
            }
        }
        if (genEmpty) {
            ops.rmdir(t, Caller.ROOT, g.root(), dir.name());
            CheckpointOps.forget(t, rec);
            return true;
        }
        return false;
    }
}
