package io.strata.core.auth;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.stream.Collectors;

/**
 * A set of POSIX user or group ids as sorted, disjoint, inclusive ranges: what a {@code client}
 * token may act for ({@code uids=1000-1999}). Ids are unsigned 32-bit values; 4294967295
 * ({@code (uid_t) -1}) is never an id. Written as {@code 100,1000-1999} on the command line and
 * as a count byte followed by {@code (lo, hi)} pairs of u32 in a token's claims.
 */
public record IdRanges(List<Range> ranges) {
    /** Largest valid id: {@code (uid_t) -1} means "no id" to the kernel. */
    public static final long MAX_ID = 0xFFFF_FFFEL;
    /** Most ranges one claim carries: a token has to stay small. */
    public static final int MAX_RANGES = 16;
    /** Every id, root's included. */
    public static final IdRanges ALL = new IdRanges(List.of(new Range(0, MAX_ID)));

    /** One inclusive range of ids. */
    public record Range(long lo, long hi) {
        public Range {
            if (lo < 0 || hi > MAX_ID || lo > hi) {
                throw new IllegalArgumentException("bad id range " + lo + "-" + hi + " (ids are 0-" + MAX_ID + ", low end first)");
            }
        }

        @Override
        public String toString() {
            return lo == hi ? Long.toString(lo) : lo + "-" + hi;
        }
    }

    public IdRanges {
        if (ranges.isEmpty() || ranges.size() > MAX_RANGES) {
            throw new IllegalArgumentException("an id set has 1-" + MAX_RANGES + " ranges, got " + ranges.size());
        }
        List<Range> sorted = new ArrayList<>(ranges);
        sorted.sort(Comparator.comparingLong(Range::lo));
        for (int i = 1; i < sorted.size(); i++) {
            if (sorted.get(i).lo() <= sorted.get(i - 1).hi()) {
                throw new IllegalArgumentException("id ranges " + sorted.get(i - 1) + " and " + sorted.get(i) + " overlap");
            }
        }
        ranges = List.copyOf(sorted);
    }

    /**
     * Parses {@code 100,1000-1999} (or {@code all}); the error says what is wrong and how it
     * should look.
     */
    public static IdRanges parse(String text) {
        String s = text.strip();
        if (s.equals("all")) {
            return ALL;
        }
        List<Range> out = new ArrayList<>();
        for (String part : s.split(",", -1)) {
            String p = part.strip();
            int dash = p.indexOf('-');
            try {
                out.add(dash < 0 ? new Range(id(p), id(p)) : new Range(id(p.substring(0, dash)), id(p.substring(dash + 1))));
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException("'" + text + "': " + e.getMessage()
                        + "; expected ids and ranges such as 100,1000-1999 (or all)");
            }
        }
        return new IdRanges(out);
    }

    private static long id(String s) {
        String t = s.strip();
        if (!t.matches("[0-9]{1,10}")) {
            throw new IllegalArgumentException("'" + s + "' is not an id");
        }
        long v = Long.parseLong(t);
        if (v > MAX_ID) {
            throw new IllegalArgumentException(v + " is above the largest id " + MAX_ID);
        }
        return v;
    }

    /** Whether {@code id} (a uid or gid as Java's signed int: -1 is 4294967295) is in the set. */
    public boolean contains(int id) {
        long v = Integer.toUnsignedLong(id);
        for (Range r : ranges) {
            if (v >= r.lo() && v <= r.hi()) {
                return true;
            }
        }
        return false;
    }

    void encode(ByteBuffer out) {
        out.put((byte) ranges.size());
        for (Range r : ranges) {
            out.putInt((int) r.lo()).putInt((int) r.hi());
        }
    }

    int encodedBytes() {
        return 1 + 8 * ranges.size();
    }

    static IdRanges decode(ByteBuffer in) {
        int n = in.get() & 0xFF;
        if (n == 0 || n > MAX_RANGES) {
            throw new IllegalArgumentException("an id set has 1-" + MAX_RANGES + " ranges, got " + n);
        }
        List<Range> rs = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            rs.add(new Range(Integer.toUnsignedLong(in.getInt()), Integer.toUnsignedLong(in.getInt())));
        }
        return new IdRanges(rs);
    }

    @Override
    public String toString() {
        return equals(ALL) ? "all" : ranges.stream().map(Range::toString).collect(Collectors.joining(","));
    }
}
