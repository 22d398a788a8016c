package io.strata.protocol.meta;

import io.netty.buffer.ByteBuf;
import io.strata.core.InodeId;
import io.strata.core.rpc.Wire;
import io.strata.core.tier.CachedCopies;
import java.util.ArrayList;
import java.util.List;

/**
 * Prefetched files as the meta service records them (docs/scheduler-hooks.md): a file whose
 * chunks a scheduler's hint had L2 agents fetch from L3 carries a record naming the data version
 * the copies hold, the agents they were placed among and the hints (owners) that want them. An
 * open of the file at that data version returns the copies ({@link OpenResult#cached}), so the
 * reader tries L2 before L3 without asking anyone. The record goes when its last owner lets go
 * or the file is destroyed; a write makes it stale (another data version) at once.
 */
public final class Cached {
    private Cached() {
    }

    /** Most files one request marks or unmarks. */
    public static final int MAX_FILES = 10_000;
    /** Most agents a file's copies are placed among. */
    public static final int MAX_AGENTS = 4_096;
    /** Most hints one file's record names. */
    public static final int MAX_OWNERS = 4_096;

    /** What a request asks ({@link MetaMessage.Cache}). */
    public enum Op implements Wire.Tagged {
        /** Record the files as held for the owner among the agents (at their data versions). */
        MARK(1),
        /** The owner lets go of the files; a record left with no owner is removed. */
        UNMARK(2),
        /** The records of the files (those that have one). */
        GET(3);

        private final int tag;

        Op(int tag) {
            this.tag = tag;
        }

        @Override
        public int wireTag() {
            return tag;
        }
    }

    /** A file at the data version its copies were fetched at. */
    public record File(InodeId inode, long dataVersion) {
        void encode(ByteBuf out) {
            out.writeLong(inode.value()).writeLong(dataVersion);
        }

        static File decode(ByteBuf in) {
            return new File(InodeId.of(Wire.readLong(in, "inode")), Wire.readLong(in, "data version"));
        }
    }

    /** One file's record. */
    public record Record(InodeId inode, long dataVersion, List<Integer> agents, List<Long> owners) {
        public Record {
            agents = List.copyOf(agents);
            owners = List.copyOf(owners);
        }

        /** What a reader of the file at {@link #dataVersion} uses. */
        public CachedCopies copies() {
            return new CachedCopies(dataVersion, agents);
        }

        public void encode(ByteBuf out) {
            out.writeLong(inode.value()).writeLong(dataVersion);
            ints(out, agents);
            out.writeInt(owners.size());
            owners.forEach(out::writeLong);
        }

        public static Record decode(ByteBuf in) {
            InodeId inode = InodeId.of(Wire.readLong(in, "inode"));
            long dv = Wire.readLong(in, "data version");
            List<Integer> agents = ints(in, "agents", MAX_AGENTS);
            int n = Wire.readCount(in, "owners", MAX_OWNERS, 8);
            List<Long> owners = new ArrayList<>(n);
            for (int i = 0; i < n; i++) {
                owners.add(Wire.readLong(in, "owner"));
            }
            return new Record(inode, dv, agents, owners);
        }
    }

    /** What a MARK did: the records of the files it marked, and the files it left alone because their data version moved on. */
    public record Marked(List<Record> records, List<InodeId> stale) {
        public Marked {
            records = List.copyOf(records);
            stale = List.copyOf(stale);
        }
    }

    static void files(ByteBuf out, List<File> files) {
        out.writeInt(files.size());
        files.forEach(f -> f.encode(out));
    }

    static List<File> files(ByteBuf in) {
        int n = Wire.readCount(in, "files", MAX_FILES, 16);
        List<File> out = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            out.add(File.decode(in));
        }
        return out;
    }

    static void ints(ByteBuf out, List<Integer> xs) {
        out.writeInt(xs.size());
        xs.forEach(out::writeInt);
    }

    static List<Integer> ints(ByteBuf in, String what, int max) {
        int n = Wire.readCount(in, what, max, 4);
        List<Integer> out = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            out.add(Wire.readInt(in, what));
        }
        return out;
    }

    /** Writes the copies an open returns: a flag, then the data version and agents. */
    public static void writeCopies(ByteBuf out, CachedCopies c) {
        Wire.writeBool(out, c != null);
        if (c != null) {
            out.writeLong(c.dataVersion());
            ints(out, c.agents());
        }
    }

    /** Reads what {@link #writeCopies} wrote; null when there are none. */
    public static CachedCopies readCopies(ByteBuf in) {
        if (!Wire.readBool(in, "has cached copies")) {
            return null;
        }
        long dv = Wire.readLong(in, "data version");
        List<Integer> agents = ints(in, "agents", MAX_AGENTS);
        if (agents.isEmpty()) {
            throw new Wire.Malformed("cached copies name no agent");
        }
        return new CachedCopies(dv, agents);
    }
}
