package io.strata.namespace;

import static io.strata.namespace.Permissions.R;
import static io.strata.namespace.Permissions.W;
import static io.strata.namespace.Permissions.X;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import io.strata.config.policy.Profile;
import io.strata.core.InodeId;
import io.strata.core.Status;
import io.strata.core.StrataException;
import io.strata.namespace.kv.Bytes;
import io.strata.namespace.kv.KeyValue;
import io.strata.protocol.meta.Caller;
import io.strata.protocol.meta.Checkpoint;
import io.strata.protocol.meta.Checkpoint.Durability;
import io.strata.protocol.meta.Checkpoint.Entry;
import io.strata.protocol.meta.Checkpoint.Generation;
import io.strata.protocol.meta.Checkpoint.State;
import io.strata.protocol.meta.InodeAttrs;
import io.strata.protocol.meta.InodeType;
import io.strata.protocol.meta.Names;
import io.strata.protocol.meta.OpenFlags;
import io.strata.protocol.meta.Staging;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.Deque;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Checkpoint generations in the keyspace (docs/checkpoints.md): the bodies of the checkpoint
 * operations and the checks other namespace operations make on them. Each runs inside the
 * caller's transaction.
 *
 * <p>A generation's record lives under its root ({@code CKPT|root|gen}); a commit writes its
 * manifest ({@code CKPM|gen|path}) and marks every member inode ({@code CKPF|inode}), so that an
 * operation that would change a committed generation finds out with one point read. Removing
 * part of a committed generation withdraws it (state {@code removing}: it is no longer listed as
 * committed, and the keeper removes the rest).
 */
final class CheckpointOps {
    /** How many problems a refused commit names. */
    private static final int NAMED = 5;

    private CheckpointOps() {
    }

    // ---- roots, records, members ---------------------------------------------------------

    /** Whether {@code dir} is a checkpoint root: its own policy sets {@code profile=checkpoint}. */
    static boolean isRoot(InodeAttrs dir) {
        return dir != null && dir.isDirectory() && Profile.CHECKPOINT.policyName().equals(dir.policy().get("profile"));
    }

    static Generation record(NsTx t, InodeId root, InodeId gen) {
        byte[] v = t.reader.get(KeySpace.generation(root, gen));
        return v == null ? null : Generation.decode(Unpooled.wrappedBuffer(v));
    }

    static void put(NsTx t, Generation g) {
        ByteBuf b = Unpooled.buffer(160);
        try {
            g.encode(b);
            t.tx.set(KeySpace.generation(g.root(), g.dir()), ByteBufUtil.getBytes(b));
        } finally {
            b.release();
        }
    }

    /** Every record of {@code root}: committed ones in commit order, then the others by start time. */
    static List<Generation> records(NsTx t, InodeId root) {
        byte[] p = KeySpace.under(KeySpace.CHECKPOINT, root);
        List<Generation> out = new ArrayList<>();
        for (KeyValue kv : t.reader.getRange(p, Bytes.strinc(p), 0)) {
            out.add(Generation.decode(Unpooled.wrappedBuffer(kv.value())));
        }
        out.sort(Comparator.comparing((Generation g) -> g.seq() == 0).thenComparingLong(Generation::seq)
                .thenComparingLong(Generation::startedMillis));
        return out;
    }

    /** The committed generation {@code inode} belongs to, or null (not a member, or its generation is not committed). */
    static Generation committedOwner(NsTx t, InodeId inode) {
        byte[] v = t.reader.get(KeySpace.under(KeySpace.CHECKPOINT_MEMBER, inode));
        if (v == null) {
            return null;
        }
        Generation g = record(t, InodeId.of(Bytes.readLe64(v, 0, 8)), InodeId.of(Bytes.readLe64(v, 8, 8)));
        return g != null && g.committed() ? g : null;
    }

    /** Whether {@code inode} belongs to a committed checkpoint generation (or one withdrawn and not yet removed). */
    static boolean isMember(NsTx t, InodeId inode) {
        return t.reader.get(KeySpace.under(KeySpace.CHECKPOINT_MEMBER, inode)) != null;
    }

    /** Refuses an operation that would change {@code inode}, a member of a committed generation. */
    static void checkMutable(NsTx t, InodeId inode, String op) {
        Generation g = committedOwner(t, inode);
        if (g != null) {
            throw new StrataException(Status.READ_ONLY, op + ": " + inode + " belongs to committed checkpoint generation \"" + g.name()
                    + "\" (committed generations are read-only)");
        }
    }

    /**
     * Something in directory {@code dir} is being removed: a committed generation it belongs to
     * is withdrawn (it stops being committed; the keeper removes the rest). A pinned one is not.
     */
    static void withdrawIfCommitted(NsTx t, InodeId dir, String op) {
        Generation g = committedOwner(t, dir);
        if (g == null) {
            return;
        }
        if (g.pinned()) {
            throw new StrataException(Status.NOT_PERMITTED, op + ": checkpoint generation \"" + g.name()
                    + "\" is pinned (strata ckpt unpin it first)");
        }
        put(t, g.with(State.REMOVING, g.durability()));
    }

    /** A directory was made: in a checkpoint root it is a new generation, being written from now. */
    static void madeDir(NsTx t, InodeAttrs parent, InodeAttrs dir, long nowMillis) {
        if (isRoot(parent)) {
            put(t, new Generation(parent.id(), dir.id(), dir.name(), State.WRITING, Durability.NONE, null, 0, 0, 0, 0, false, nowMillis,
                    0, 0, 0, 0));
        }
    }

    /** A directory's policy changed: it is registered as a checkpoint root for the keeper, or no longer. */
    static void policyChanged(NsTx t, InodeAttrs dir) {
        byte[] k = KeySpace.under(KeySpace.CHECKPOINT_ROOT, dir.id());
        if (isRoot(dir)) {
            t.tx.set(k, new byte[0]);
        } else if (t.reader.get(k) != null) {
            t.tx.clear(k);
        }
    }

    static List<InodeId> roots(NsTx t) {
        byte[] p = KeySpace.CHECKPOINT_ROOT.prefix();
        List<InodeId> out = new ArrayList<>();
        for (KeyValue kv : t.reader.getRange(p, Bytes.strinc(p), 0)) {
            out.add(KeySpace.idAt(kv.key()));
        }
        return out;
    }

    // ---- content checksums -----------------------------------------------------------------

    private static final long POISONED = -1;

    /** Whether a session other than {@code except} (0: none excepted) has {@code inode} open for writing. */
    static boolean otherWriter(NsTx t, InodeId inode, long except) {
        byte[] p = KeySpace.under(KeySpace.SESSION, inode);
        for (KeyValue kv : t.reader.getRange(p, Bytes.strinc(p), 0)) {
            long session = java.nio.ByteBuffer.wrap(kv.key(), 12, 8).getLong();
            if (session != except && (kv.value()[8] & OpenFlags.WRITE) != 0) {
                return true;
            }
        }
        return false;
    }

    /** A session opens {@code inode} for writing: if another writer has it open, no content checksum can be trusted until both are done. */
    static void openedForWrite(NsTx t, InodeId inode, long session) {
        if (otherWriter(t, inode, session)) {
            byte[] v = new byte[16];
            Bytes.putLe64(v, 0, POISONED);
            t.tx.set(KeySpace.under(KeySpace.CONTENT_CRC, inode), v);
        }
    }

    /**
     * A publish of {@code a}'s writes: at close, a checksum of the whole file from its only writer
     * is kept; any other publish of writes forgets the checksum the file had.
     */
    static void published(NsTx t, InodeAttrs a, long session, boolean wrote, boolean end, long crc, long crcLength) {
        byte[] k = KeySpace.under(KeySpace.CONTENT_CRC, a.id());
        byte[] cur = t.reader.get(k);
        boolean poisoned = cur != null && Bytes.readLe64(cur, 0, 8) == POISONED;
        boolean others = otherWriter(t, a.id(), session);
        if (end && crc != Checkpoint.NO_CRC && crcLength == a.length() && !poisoned && !others) {
            byte[] v = new byte[16];
            Bytes.putLe64(v, 0, a.length());
            Bytes.putLe64(v, 8, crc & 0xFFFF_FFFFL);
            t.tx.set(k, v);
        } else if (cur != null && (wrote || end) && !(poisoned && others)) {
            t.tx.clear(k); // written without a checksum, or the overlap that poisoned it is over
        }
    }

    /** The file's content checksum, or {@link Checkpoint#NO_CRC}. */
    static long contentCrc(NsTx t, InodeAttrs a) {
        byte[] v = t.reader.get(KeySpace.under(KeySpace.CONTENT_CRC, a.id()));
        if (v == null || Bytes.readLe64(v, 0, 8) != a.length()) {
            return Checkpoint.NO_CRC;
        }
        return Bytes.readLe64(v, 8, 8);
    }

    static void forgetCrc(NsTx t, InodeId inode) {
        t.tx.clear(KeySpace.under(KeySpace.CONTENT_CRC, inode));
    }

    // ---- operations ------------------------------------------------------------------------

    /** The generation directory {@code gen} and its root; INVALID_ARGUMENT when {@code gen} is not a generation. */
    private record Place(InodeAttrs root, InodeAttrs gen) {
    }

    private static Place place(NsTx t, InodeId gen) {
        InodeAttrs dir = t.requireDir(gen);
        InodeAttrs root = dir.parent() == null || dir.id().equals(InodeId.ROOT) ? null : t.inode(dir.parent());
        if (!isRoot(root)) {
            throw new StrataException(Status.INVALID_ARGUMENT, "\"" + Names.printable(dir.name()) + "\" (" + gen
                    + ") is not a checkpoint generation: its parent is not a checkpoint root (set profile=checkpoint on the parent)");
        }
        return new Place(root, dir);
    }

    /** Commits generation {@code gen}, or answers it as it is when it is committed already; {@code committing} runs when this call commits it. */
    static Generation commit(NsTx t, Caller c, InodeId gen, Checkpoint.Level level, List<Checkpoint.Expected> expected, long nowMillis,
                             Runnable committing) {
        Place p = place(t, gen);
        Permissions.check(c, p.gen(), W | X, "checkpoint commit");
        Generation rec = record(t, p.root().id(), gen);
        if (rec != null && rec.committed()) {
            // committed already (a retry, or a second rank's commit): answered as it is if it is what the caller expects
            List<String> differ = new ArrayList<>();
            for (Checkpoint.Expected e : expected) {
                byte[] v = t.reader.get(KeySpace.manifest(gen, e.path()));
                Entry have = v == null ? null : entry(gen, new KeyValue(KeySpace.manifest(gen, e.path()), v));
                if (have == null || have.type() != InodeType.FILE) {
                    differ.add(e.path() + " is not in it");
                } else if (e.size() >= 0 && have.size() != e.size()) {
                    differ.add(e.path() + " has " + have.size() + " bytes in it, not " + e.size());
                }
            }
            if (!differ.isEmpty()) {
                throw new StrataException(Status.READ_ONLY, "checkpoint generation \"" + Names.printable(rec.name())
                        + "\" was committed with another manifest: " + named(differ));
            }
            return withProgress(t, rec);
        }
        if (rec != null && rec.state() == State.REMOVING) {
            throw new StrataException(Status.NOT_FOUND, "checkpoint generation \"" + rec.name() + "\" is being removed");
        }
        Tree tree = walk(t, gen);
        List<String> problems = new ArrayList<>();
        Status status = null;
        if (!tree.busy.isEmpty()) {
            status = Status.FILE_BUSY;
            problems.add("open for writing: " + named(tree.busy));
        }
        List<String> missing = new ArrayList<>();
        List<String> wrongSize = new ArrayList<>();
        for (Checkpoint.Expected e : expected) {
            Entry have = tree.byPath.get(e.path());
            if (have == null) {
                missing.add(e.path());
            } else if (have.type() != InodeType.FILE) {
                wrongSize.add(e.path() + " is a " + have.type().name().toLowerCase(java.util.Locale.ROOT) + ", not a file");
            } else if (e.size() >= 0 && have.size() != e.size()) {
                wrongSize.add(e.path() + " has " + have.size() + " bytes, expected " + e.size());
            }
        }
        if (!missing.isEmpty()) {
            status = status == null ? Status.NOT_FOUND : status;
            problems.add("missing: " + named(missing));
        }
        if (!wrongSize.isEmpty()) {
            status = status == null ? Status.INVALID_ARGUMENT : status;
            problems.add("size differs: " + named(wrongSize));
        }
        if (status != null) {
            throw new StrataException(status, "checkpoint generation \"" + Names.printable(p.gen().name()) + "\" not committed: "
                    + String.join("; ", problems));
        }
        long seq = 1;
        for (Generation g : records(t, p.root().id())) {
            seq = Math.max(seq, g.seq() + 1);
        }
        long files = 0;
        long bytes = 0;
        long unchecked = 0;
        byte[] member = new byte[16];
        Bytes.putLe64(member, 0, p.root().id().value());
        Bytes.putLe64(member, 8, gen.value());
        t.tx.set(KeySpace.under(KeySpace.CHECKPOINT_MEMBER, gen), member);
        for (Entry e : tree.entries) {
            ByteBuf b = Unpooled.buffer(40);
            try {
                b.writeLong(e.inode().value());
                io.strata.core.rpc.Wire.writeEnum(b, e.type());
                b.writeLong(e.size()).writeLong(e.crc());
                t.tx.set(KeySpace.manifest(gen, e.path()), ByteBufUtil.getBytes(b));
            } finally {
                b.release();
            }
            t.tx.set(KeySpace.under(KeySpace.CHECKPOINT_MEMBER, e.inode()), member);
            if (e.type() == InodeType.FILE) {
                files++;
                bytes += e.size();
                unchecked += e.hasCrc() ? 0 : 1;
            }
        }
        long started = rec != null ? rec.startedMillis() : p.gen().ctimeNanos() / 1_000_000;
        Generation g = new Generation(p.root().id(), gen, p.gen().name(), State.COMMITTED, Durability.NONE, level, seq, files, bytes,
                unchecked, false, started, nowMillis, 0, 0, 0);
        g = withProgress(t, g);
        if (g.durability() == Durability.LOST) {
            throw new StrataException(Status.DATA_LOST, "checkpoint generation \"" + Names.printable(p.gen().name())
                    + "\" not committed: a file's L2 copies are lost (strata admin l2 --lost names it)");
        }
        put(t, g);
        committing.run();
        return g;
    }

    private static String named(List<String> items) {
        String s = String.join(", ", items.subList(0, Math.min(NAMED, items.size())));
        return items.size() > NAMED ? s + " and " + (items.size() - NAMED) + " more" : s;
    }

    /** A generation's tree: its entries (paths relative to it) and the files open for writing. */
    private static final class Tree {
        final List<Entry> entries = new ArrayList<>();
        final Map<String, Entry> byPath = new HashMap<>();
        final List<String> busy = new ArrayList<>();
    }

    private static Tree walk(NsTx t, InodeId gen) {
        Tree tree = new Tree();
        Deque<Object[]> todo = new ArrayDeque<>();
        todo.add(new Object[] {gen, ""});
        while (!todo.isEmpty()) {
            Object[] d = todo.poll();
            InodeId dir = (InodeId) d[0];
            String prefix = (String) d[1];
            byte[] p = KeySpace.under(KeySpace.DENTRY, dir);
            for (KeyValue kv : t.reader.getRange(p, Bytes.strinc(p), 0)) {
                String name = KeySpace.nameAt(kv.key());
                String path = prefix.isEmpty() ? name : prefix + "/" + name;
                InodeId child = InodeId.of(Bytes.readLe64(kv.value(), 0, 8));
                InodeAttrs a = t.requireInode(child);
                Entry e;
                if (a.isDirectory()) {
                    e = new Entry(path, child, InodeType.DIRECTORY, 0, 0);
                    todo.add(new Object[] {child, path});
                } else if (a.isFile()) {
                    if (otherWriter(t, child, 0)) {
                        tree.busy.add(path);
                    }
                    e = new Entry(path, child, InodeType.FILE, a.length(), contentCrc(t, a));
                } else {
                    e = new Entry(path, child, a.type(), a.length(), 0);
                }
                tree.entries.add(e);
                tree.byPath.put(path, e);
                if (tree.entries.size() > Checkpoint.MAX_ENTRIES) {
                    throw new StrataException(Status.INVALID_ARGUMENT, "a checkpoint generation holds at most " + Checkpoint.MAX_ENTRIES
                            + " files and directories");
                }
            }
        }
        return tree;
    }

    /** How far a committed generation's files have come: the least of their states, and when its drain began and ended. */
    record Progress(Durability durability, long drainingMillis, long l3Millis) {
    }

    /** How far the files of committed generation {@code gen} have come, from their staging records. */
    static Durability durability(NsTx t, InodeId gen) {
        return progress(t, gen).durability();
    }

    static Progress progress(NsTx t, InodeId gen) {
        byte[] p = KeySpace.under(KeySpace.CHECKPOINT_MANIFEST, gen);
        int staged = 0;
        int draining = 0;
        int durable = 0;
        long firstDraining = 0;
        long lastDurable = 0;
        for (KeyValue kv : t.reader.getRange(p, Bytes.strinc(p), 0)) {
            Entry e = entry(gen, kv);
            if (e.type() != InodeType.FILE) {
                continue;
            }
            Staging s = t.staging(e.inode());
            if (s == null) {
                continue; // never staged: in L3 since it was closed
            }
            if (s.drainingMillis() > 0) {
                firstDraining = firstDraining == 0 ? s.drainingMillis() : Math.min(firstDraining, s.drainingMillis());
            }
            switch (s.state()) {
                case LOST -> {
                    return new Progress(Durability.LOST, firstDraining, 0);
                }
                case DURABLE -> {
                    durable++;
                    lastDurable = Math.max(lastDurable, s.durableMillis());
                }
                case DRAINING -> draining++;
                default -> staged++;
            }
        }
        if (staged == 0 && draining == 0) {
            return new Progress(Durability.L3, firstDraining == 0 ? lastDurable : firstDraining, lastDurable);
        }
        return new Progress(draining > 0 || durable > 0 ? Durability.DRAINING : Durability.L2, firstDraining, 0);
    }

    /** {@code g} with its durability now and the times its files' records give (never before its commit). */
    static Generation withProgress(NsTx t, Generation g) {
        if (!g.committed() || g.durability() == Durability.L3) {
            return g;
        }
        Progress p = progress(t, g.dir());
        long c = g.committedMillis();
        long draining = g.drainingMillis() != 0 ? g.drainingMillis()
                : p.drainingMillis() != 0 || p.durability() == Durability.L3 ? Math.max(c, p.drainingMillis()) : 0;
        long l3 = g.l3Millis() != 0 ? g.l3Millis() : p.durability() == Durability.L3 ? Math.max(c, p.l3Millis()) : 0;
        long l2 = g.l2Millis() != 0 ? g.l2Millis() : p.durability().reaches(Checkpoint.Level.L2) ? c : 0;
        return new Generation(g.root(), g.dir(), g.name(), g.state(), p.durability(), g.level(), g.seq(), g.files(), g.bytes(),
                g.unchecked(), g.pinned(), g.startedMillis(), c, l2, draining, l3);
    }

    static Entry entry(InodeId gen, KeyValue kv) {
        String path = new String(kv.key(), 12, kv.key().length - 12, StandardCharsets.UTF_8);
        ByteBuf b = Unpooled.wrappedBuffer(kv.value());
        return new Entry(path, InodeId.of(b.readLong()), io.strata.core.rpc.Wire.readEnum(b, InodeType.class, "type"), b.readLong(),
                b.readLong());
    }

    static Generation status(NsTx t, Caller c, InodeId gen) {
        Place p = place(t, gen);
        Permissions.check(c, p.gen(), R | X, "checkpoint status");
        Generation rec = record(t, p.root().id(), gen);
        if (rec == null) {
            return new Generation(p.root().id(), gen, p.gen().name(), State.WRITING, Durability.NONE, null, 0, 0, 0, 0, false,
                    p.gen().ctimeNanos() / 1_000_000, 0, 0, 0, 0);
        }
        return withProgress(t, rec);
    }

    static List<Generation> list(NsTx t, Caller c, InodeId root) {
        InodeAttrs r = t.requireDir(root);
        if (!isRoot(r)) {
            throw new StrataException(Status.INVALID_ARGUMENT, root + " is not a checkpoint root (set profile=checkpoint on it)");
        }
        Permissions.check(c, r, R | X, "checkpoint list");
        return records(t, root).stream().map(g -> withProgress(t, g)).toList();
    }

    static Checkpoint.ManifestPage manifest(NsTx t, Caller c, InodeId gen, String after, int limit) {
        Place p = place(t, gen);
        Permissions.check(c, p.gen(), R | X, "checkpoint manifest");
        Generation rec = record(t, p.root().id(), gen);
        if (rec == null || rec.state() != State.COMMITTED) {
            throw new StrataException(Status.INVALID_ARGUMENT, "checkpoint generation \"" + Names.printable(p.gen().name())
                    + "\" is not committed: it has no manifest");
        }
        int n = Math.max(1, Math.min(limit, 10_000));
        byte[] prefix = KeySpace.under(KeySpace.CHECKPOINT_MANIFEST, gen);
        byte[] from = after == null || after.isEmpty() ? prefix : Bytes.keyAfter(KeySpace.manifest(gen, after));
        List<KeyValue> kvs = t.reader.getRange(from, Bytes.strinc(prefix), n + 1);
        List<Entry> out = new ArrayList<>();
        for (int i = 0; i < Math.min(n, kvs.size()); i++) {
            out.add(entry(gen, kvs.get(i)));
        }
        return new Checkpoint.ManifestPage(out, kvs.size() > n);
    }

    static Generation pin(NsTx t, Caller c, InodeId gen, boolean pin) {
        Place p = place(t, gen);
        Permissions.check(c, p.gen(), W | X, pin ? "checkpoint pin" : "checkpoint unpin");
        Generation rec = record(t, p.root().id(), gen);
        if (rec == null || !rec.committed()) {
            throw new StrataException(Status.INVALID_ARGUMENT, "only a committed generation can be pinned; \""
                    + Names.printable(p.gen().name()) + "\" is " + (rec == null ? "being written" : rec.state().text()));
        }
        Generation g = rec.withPinned(pin);
        put(t, g);
        return withProgress(t, g);
    }

    /** Forgets a generation whose directory is gone: its record, manifest and member marks. */
    static void forget(NsTx t, Generation g) {
        byte[] p = KeySpace.under(KeySpace.CHECKPOINT_MANIFEST, g.dir());
        for (KeyValue kv : t.reader.getRange(p, Bytes.strinc(p), 0)) {
            Entry e = entry(g.dir(), kv);
            byte[] mk = KeySpace.under(KeySpace.CHECKPOINT_MEMBER, e.inode());
            byte[] v = t.reader.get(mk);
            if (v != null && Bytes.readLe64(v, 8, 8) == g.dir().value()) {
                t.tx.clear(mk);
            }
        }
        t.tx.clearRange(p, Bytes.strinc(p));
        t.tx.clear(KeySpace.under(KeySpace.CHECKPOINT_MEMBER, g.dir()));
        t.tx.clear(KeySpace.generation(g.root(), g.dir()));
    }
}
