package io.strata.protocol.meta;

import io.netty.buffer.ByteBuf;
import io.strata.core.InodeId;
import io.strata.core.rpc.Wire;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * Where a staged file's newest bytes are and how far its drain to L3 has come: the file's
 * staging record, kept by the meta service next to the inode (docs/internals/l2.md).
 *
 * <p>A staging <b>epoch</b> begins when a file under {@code tiers.l2 = stage} is opened for
 * writing while it has nothing undrained and no open session; it fixes the <b>candidates</b>
 * (the L2 agents and their failure domains) from which every chunk's holders are chosen by the
 * placement function {@code placementVersion} with {@code replicas} copies. A chunk whose holders
 * differ from that choice (an agent was down or full when it was written) is listed in
 * {@code overrides}: its holders, or none when it was written through to L3. {@code written}
 * lists the chunks written in the epoch (as ranges), so a reader knows which chunks must be
 * found in L2 and the drain knows which must be durable.
 *
 * <p>Durability: every writer's publish (at fsync or close) bumps {@code publishVersion}. An
 * agent that drained reports, for the publish version it saw, either that draining has begun or
 * that every written chunk is durable in L3 (it checked each chunk's holders). The file is
 * durable when {@code durableVersion == publishVersion}: staged, then draining, then durable, with
 * the time of each.
 */
public record Staging(InodeId inode, long epoch, int placementVersion, int replicas, List<Candidate> candidates,
                      Map<Integer, List<Integer>> overrides, List<Range> written, long publishVersion, long drainingVersion,
                      long durableVersion, String lost, long startedMillis, long publishedMillis, long drainingMillis,
                      long durableMillis) {
    /** Most candidates, overrides and written ranges one record holds. */
    public static final int MAX_ITEMS = 65_536;

    /** An L2 agent staging may place chunks on: its node id and failure domain. */
    public record Candidate(int node, String domain) {
        public Candidate {
            if (node <= 0 || domain == null || domain.isBlank()) {
                throw new IllegalArgumentException("a staging candidate needs a node id and a domain");
            }
        }
    }

    /** Chunk indexes {@code first..last}, inclusive. */
    public record Range(int first, int last) {
        public Range {
            if (first < 0 || last < first) {
                throw new IllegalArgumentException("bad chunk range " + first + ".." + last);
            }
        }
    }

    /** What one writer publishes (at fsync or close): the chunks it placed off their choice, the chunks it wrote. */
    public record Delta(Map<Integer, List<Integer>> overrides, List<Range> written) {
        public Delta {
            overrides = Map.copyOf(overrides);
            written = coalesce(written);
        }

        public boolean isEmpty() {
            return overrides.isEmpty() && written.isEmpty();
        }

        public void encode(ByteBuf out) {
            Staging.overrides(out, overrides);
            Staging.ranges(out, written);
        }

        public static Delta decode(ByteBuf in) {
            try {
                return new Delta(Staging.overrides(in), Staging.ranges(in));
            } catch (IllegalArgumentException e) {
                throw new Wire.Malformed("staging publish: " + e.getMessage());
            }
        }
    }

    /** Where the file's staging stands. */
    public enum State {
        /** Written to L2; the drain of the latest publish has not begun. */
        STAGED,
        /** The drain of the latest publish has begun. */
        DRAINING,
        /** Every published chunk is durable in L3 (also: nothing was published). */
        DURABLE,
        /** Every copy of some undrained chunk is gone: the file cannot be read whole. */
        LOST
    }

    public Staging {
        candidates = List.copyOf(candidates);
        Map<Integer, List<Integer>> o = new TreeMap<>();
        overrides.forEach((k, v) -> o.put(k, List.copyOf(v)));
        overrides = java.util.Collections.unmodifiableMap(o);
        written = List.copyOf(written);
        lost = lost == null ? "" : lost;
    }

    /** A new epoch over {@code candidates}. */
    public static Staging begin(InodeId inode, long epoch, int placementVersion, int replicas, List<Candidate> candidates,
                                long nowMillis) {
        return new Staging(inode, epoch, placementVersion, replicas, candidates, Map.of(), List.of(), 0, 0, 0, "", nowMillis, 0, 0, 0);
    }

    public State state() {
        if (!lost.isEmpty()) {
            return State.LOST;
        }
        if (durableVersion >= publishVersion) {
            return State.DURABLE;
        }
        return drainingVersion >= publishVersion ? State.DRAINING : State.STAGED;
    }

    /** Whether something published is not yet durable in L3. */
    public boolean undrained() {
        return durableVersion < publishVersion;
    }

    /** Whether chunk {@code index} was written in this epoch. */
    public boolean wasWritten(long index) {
        for (Range r : written) {
            if (index >= r.first() && index <= r.last()) {
                return true;
            }
        }
        return false;
    }

    /** This record with a writer's publish merged in: new overrides, more written chunks, the next publish version. */
    public Staging publish(Delta d, long nowMillis) {
        Map<Integer, List<Integer>> o = new TreeMap<>(overrides);
        o.putAll(d.overrides());
        List<Range> w = new ArrayList<>(written);
        w.addAll(d.written());
        return new Staging(inode, epoch, placementVersion, replicas, candidates, o, coalesce(w), publishVersion + 1, drainingVersion,
                durableVersion, lost, startedMillis, nowMillis, drainingMillis, durableMillis);
    }

    /**
     * This record with a drain report about publish {@code version}: the drain has begun, or (with
     * {@code durable}) every chunk written up to that publish is durable in L3. A report about a
     * publish this record has not seen is refused by the caller; a stale one changes nothing.
     */
    public Staging drained(long version, boolean durable, long nowMillis) {
        long dv = drainingVersion;
        long dm = drainingMillis;
        if (version > dv) {
            dv = version;
            dm = nowMillis;
        }
        long uv = durableVersion;
        long um = durableMillis;
        if (durable && version > uv) {
            uv = version;
            um = nowMillis;
        }
        return new Staging(inode, epoch, placementVersion, replicas, candidates, overrides, written, publishVersion, dv, uv, lost,
                startedMillis, publishedMillis, dm, um);
    }

    public Staging markLost(String why) {
        return new Staging(inode, epoch, placementVersion, replicas, candidates, overrides, written, publishVersion, drainingVersion,
                durableVersion, why, startedMillis, publishedMillis, drainingMillis, durableMillis);
    }

    /** Sorted, merged ranges. */
    static List<Range> coalesce(List<Range> in) {
        List<Range> sorted = new ArrayList<>(in);
        sorted.sort((a, b) -> Integer.compare(a.first(), b.first()));
        List<Range> out = new ArrayList<>();
        for (Range r : sorted) {
            if (!out.isEmpty() && (long) r.first() <= (long) out.get(out.size() - 1).last() + 1) {
                Range last = out.remove(out.size() - 1);
                out.add(new Range(last.first(), Math.max(last.last(), r.last())));
            } else {
                out.add(r);
            }
        }
        return out;
    }

    // ---- wire and store form ----

    public void encode(ByteBuf out) {
        out.writeLong(inode.value()).writeLong(epoch).writeInt(placementVersion).writeByte(replicas);
        out.writeInt(candidates.size());
        for (Candidate c : candidates) {
            out.writeInt(c.node());
            Wire.writeString(out, c.domain());
        }
        overrides(out, overrides);
        ranges(out, written);
        out.writeLong(publishVersion).writeLong(drainingVersion).writeLong(durableVersion);
        Wire.writeString(out, lost);
        out.writeLong(startedMillis).writeLong(publishedMillis).writeLong(drainingMillis).writeLong(durableMillis);
    }

    public static Staging decode(ByteBuf in) {
        try {
            long inode = Wire.readLong(in, "inode");
            long epoch = Wire.readLong(in, "epoch");
            int pv = Wire.readInt(in, "placement version");
            int replicas = Wire.readU8(in, "replicas");
            int n = Wire.readCount(in, "candidates", MAX_ITEMS, 8);
            List<Candidate> cs = new ArrayList<>(n);
            for (int i = 0; i < n; i++) {
                cs.add(new Candidate(Wire.readInt(in, "candidate"), Wire.readString(in, 256, "domain")));
            }
            Map<Integer, List<Integer>> o = overrides(in);
            List<Range> written = ranges(in);
            long published = Wire.readLong(in, "publish version");
            long draining = Wire.readLong(in, "draining version");
            long durable = Wire.readLong(in, "durable version");
            String lost = Wire.readString(in, 1024, "lost");
            return new Staging(InodeId.of(inode), epoch, pv, replicas, cs, o, written, published, draining, durable, lost,
                    Wire.readLong(in, "started"), Wire.readLong(in, "published"), Wire.readLong(in, "draining"), Wire.readLong(in, "durable"));
        } catch (IllegalArgumentException e) {
            throw new Wire.Malformed("staging record: " + e.getMessage());
        }
    }

    private static void overrides(ByteBuf out, Map<Integer, List<Integer>> overrides) {
        out.writeInt(overrides.size());
        new TreeMap<>(overrides).forEach((k, v) -> {
            out.writeInt(k);
            out.writeByte(v.size());
            v.forEach(out::writeInt);
        });
    }

    private static Map<Integer, List<Integer>> overrides(ByteBuf in) {
        int k = Wire.readCount(in, "overrides", MAX_ITEMS, 5);
        Map<Integer, List<Integer>> o = new TreeMap<>();
        for (int i = 0; i < k; i++) {
            int chunk = Wire.readInt(in, "override chunk", 0, Integer.MAX_VALUE);
            int h = Wire.readU8(in, "override holders");
            List<Integer> hs = new ArrayList<>(h);
            for (int j = 0; j < h; j++) {
                hs.add(Wire.readInt(in, "override holder", 1, Integer.MAX_VALUE));
            }
            o.put(chunk, hs);
        }
        return o;
    }

    private static void ranges(ByteBuf out, List<Range> rs) {
        out.writeInt(rs.size());
        rs.forEach(r -> out.writeInt(r.first()).writeInt(r.last()));
    }

    private static List<Range> ranges(ByteBuf in) {
        int w = Wire.readCount(in, "written ranges", MAX_ITEMS, 8);
        List<Range> written = new ArrayList<>(w);
        for (int i = 0; i < w; i++) {
            written.add(new Range(Wire.readInt(in, "range first"), Wire.readInt(in, "range last")));
        }
        return written;
    }
}
