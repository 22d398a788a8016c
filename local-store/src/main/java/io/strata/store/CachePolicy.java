package io.strata.store;

import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.function.Predicate;
import java.util.function.ToLongFunction;

/**
 * The in-memory index of a store and what it evicts and admits: a segmented LRU (entries enter
 * a probation segment and move to a protected segment, at most 80% of the capacity, when used
 * again), a separate set of pinned entries (never evicted for room; only TTL, an explicit
 * removal or a drop remove them), time-to-idle per entry, and a {@link FrequencySketch} for
 * admission: when the store is full, victims are taken from the cold end of probation first,
 * then of the protected segment, and a candidate must be more popular than each victim, else it
 * is refused. A one-time scan thus only competes with other entries used once, and cannot push
 * out entries used again and again (even once the sketch has aged). Pinned candidates skip the
 * popularity test; pinned bytes never exceed the capacity.
 *
 * <p>Room is the {@link SpaceBudget}'s: the capacity, and the file system's free space above the
 * floor. The policy only decides; the store deletes what it evicts, after the policy has taken
 * it out of the index, and counts what it reports.
 *
 * <p>Thread-safe: every method takes the policy's lock briefly (the free space is read before
 * it). Entries are compared by identity: an entry removed and replaced by a fresh one under the
 * same key is another entry ({@link #isCurrent}).
 */
public final class CachePolicy<K, E extends CacheEntry<K>> {
    private static final int PROBATION = 0;
    private static final int PROTECTED = 1;
    private static final int PINNED = 2;

    /** Why a candidate was refused. */
    public enum Refusal {
        /** A pinned candidate would take the pinned bytes past the capacity. */
        PINNED_OVER_CAPACITY,
        /** A victim it would evict is at least as popular. */
        LESS_POPULAR,
        /** Evicting every unpinned entry would not make room. */
        NO_ROOM
    }

    /**
     * The decision on a candidate: admitted with its {@code victims} (already out of the index:
     * the store deletes them) or refused ({@code refusal}); {@code floorBound} when it is the
     * free-space floor rather than the capacity that asked for the room.
     */
    public record Admission<E>(List<E> victims, Refusal refusal, boolean floorBound) {
        public boolean admitted() {
            return refusal == null;
        }
    }

    /** Entries evicted to restore the limits (already out of the index); {@code floorBound} as in {@link Admission}. */
    public record Eviction<E>(List<E> victims, boolean floorBound) {
    }

    /**
     * An access: the {@code entry} found (null when none), or {@code expired}, an entry found
     * idle past its TTL and removed (the store deletes it); {@code retagged} when the access
     * changed the entry's pin or TTL (the store records them in its index).
     */
    public record Access<E>(E entry, E expired, boolean retagged) {
    }

    private final SpaceBudget budget;
    private final ToLongFunction<K> hash;
    private final FrequencySketch sketch;
    private final HashMap<K, E> all = new HashMap<>();
    @SuppressWarnings("unchecked")
    private final LinkedHashMap<K, E>[] segments = new LinkedHashMap[]{
            new LinkedHashMap<>(1024, 0.75f, true), new LinkedHashMap<>(1024, 0.75f, true), new LinkedHashMap<>(16)};
    private long usedBytes;
    private long pinnedBytes;
    private long protectedBytes;
    private int ttlEntries;

    /**
     * A policy for a store of {@code budget}'s capacity holding about {@code expectedEntries}
     * entries (the sketch's width); {@code hash} spreads keys well (it feeds the sketch).
     */
    public CachePolicy(SpaceBudget budget, long expectedEntries, ToLongFunction<K> hash) {
        this.budget = budget;
        this.hash = hash;
        this.sketch = new FrequencySketch(expectedEntries);
    }

    // ---- the index ----

    /** Indexes a new entry (pinned, or on probation), replacing nothing: the key must be absent. */
    public synchronized void add(E e) {
        all.put(e.key(), e);
        place(e, e.pinned() ? PINNED : PROBATION);
        usedBytes += e.footprint();
        if (e.ttlNanos() > 0) {
            ttlEntries++;
        }
    }

    /** Indexes {@code e} unless its key is indexed already; returns whether it was. */
    public synchronized boolean addIfAbsent(E e) {
        if (all.containsKey(e.key())) {
            return false;
        }
        add(e);
        return true;
    }

    /** The indexed entry of {@code k} (no access recorded), or null. */
    public synchronized E get(K k) {
        return all.get(k);
    }

    public synchronized boolean contains(K k) {
        return all.containsKey(k);
    }

    /** Whether {@code e} itself (not another entry of its key) is indexed. */
    public synchronized boolean isCurrent(E e) {
        return all.get(e.key()) == e;
    }

    /** Takes {@code e} out of the index; false when it was not (or no longer) indexed. */
    public synchronized boolean remove(E e) {
        if (all.get(e.key()) != e) {
            return false;
        }
        all.remove(e.key());
        unplace(e);
        usedBytes -= e.footprint();
        if (e.ttlNanos() > 0) {
            ttlEntries--;
        }
        return true;
    }

    /** Takes the entries of {@code keys} out of the index; returns those that were in it. */
    public synchronized List<E> removeAll(Collection<K> keys) {
        List<E> out = new ArrayList<>();
        for (K k : keys) {
            E e = all.get(k);
            if (e != null && remove(e)) {
                out.add(e);
            }
        }
        return out;
    }

    /** Takes every entry whose key matches out of the index; returns them. */
    public synchronized List<E> removeIf(Predicate<K> which) {
        List<E> out = matching(which);
        for (E e : out) {
            remove(e);
        }
        return out;
    }

    /** The entries whose key matches (a copy). */
    public synchronized List<E> matching(Predicate<K> which) {
        List<E> out = new ArrayList<>();
        for (E e : all.values()) {
            if (which.test(e.key())) {
                out.add(e);
            }
        }
        return out;
    }

    // ---- accesses ----

    /**
     * One use of {@code k}, by the store or by a tier in front of it (popularity counts every
     * use, found or not): an entry idle past its TTL is removed and returned as expired;
     * otherwise its last access becomes {@code now}, its pin and TTL become the given ones (a
     * pin that would take the pinned bytes past the capacity is not taken), and it moves up
     * (probation to protected, demoting protected's coldest entries past 80% of the capacity).
     */
    public synchronized Access<E> access(K k, boolean pin, long ttlNanos, long now) {
        sketch.increment(hash.applyAsLong(k));
        E e = all.get(k);
        if (e == null) {
            return new Access<>(null, null, false);
        }
        if (e.expired(now)) {
            remove(e);
            return new Access<>(null, e, false);
        }
        e.lastAccess = now;
        boolean retag = e.pinned() != pin || e.ttlNanos() != ttlNanos;
        if (retag) {
            retag(e, pin, ttlNanos);
        }
        touch(e);
        return new Access<>(e, null, retag);
    }

    private void retag(E e, boolean pin, long ttlNanos) {
        if (pin && !e.pinned() && pinnedBytes + e.footprint() > budget.capacity()) {
            pin = false; // pinned entries never exceed the capacity
        }
        if (e.pinned() != pin) {
            unplace(e);
            e.pinned(pin);
            place(e, pin ? PINNED : PROBATION);
        }
        ttlEntries += (ttlNanos > 0 ? 1 : 0) - (e.ttlNanos() > 0 ? 1 : 0);
        e.ttlNanos(ttlNanos);
    }

    private void touch(E e) {
        if (e.segment == PROBATION) {
            unplace(e);
            place(e, PROTECTED);
            long max = budget.capacity() * 4 / 5;
            Iterator<E> it = segments[PROTECTED].values().iterator();
            while (protectedBytes > max && it.hasNext()) {
                E cold = it.next();
                if (cold == e) {
                    break;
                }
                it.remove();
                protectedBytes -= cold.footprint();
                cold.segment = PROBATION;
                segments[PROBATION].put(cold.key(), cold);
            }
        } else {
            segments[e.segment].get(e.key()); // most recently used
        }
    }

    // ---- admission and eviction ----

    /**
     * Decides whether a candidate of {@code footprint} bytes under {@code k} may be stored, and
     * whom it evicts (see the class comment). The victims of an admission are out of the index.
     */
    public Admission<E> admit(K k, long footprint, boolean pinned) {
        long usable = budget.usable();
        synchronized (this) {
            SpaceBudget.Need need = budget.need(usedBytes, footprint, usable);
            boolean floor = need.floorBound();
            if (pinned && pinnedBytes + footprint > budget.capacity()) {
                return new Admission<>(List.of(), Refusal.PINNED_OVER_CAPACITY, floor);
            }
            if (need.bytes() <= 0) {
                return new Admission<>(List.of(), null, floor);
            }
            int freq = sketch.frequency(hash.applyAsLong(k));
            List<E> victims = new ArrayList<>();
            long freed = 0;
            Iterator<E> it = victims();
            while (freed < need.bytes() && it.hasNext()) {
                E v = it.next();
                if (!pinned && freq <= sketch.frequency(hash.applyAsLong(v.key()))) {
                    return new Admission<>(List.of(), Refusal.LESS_POPULAR, floor);
                }
                victims.add(v);
                freed += v.footprint();
            }
            if (freed < need.bytes()) {
                return new Admission<>(List.of(), Refusal.NO_ROOM, floor);
            }
            for (E v : victims) {
                remove(v);
            }
            return new Admission<>(victims, null, floor);
        }
    }

    /**
     * Evicts the coldest unpinned entries until the store is within its capacity and the file
     * system's free space is at the floor (or nothing unpinned is left). {@code floorBound}
     * here: the floor was not met.
     */
    public Eviction<E> evictToLimits() {
        long usable = budget.usable();
        synchronized (this) {
            SpaceBudget.Need need = budget.need(usedBytes, 0, usable);
            List<E> victims = new ArrayList<>();
            long freed = 0;
            Iterator<E> it = victims();
            while (freed < need.bytes() && it.hasNext()) {
                E v = it.next();
                victims.add(v);
                freed += v.footprint();
            }
            for (E v : victims) {
                remove(v);
            }
            return new Eviction<>(victims, need.underFloor() > 0);
        }
    }

    /** Removes and returns every entry idle past its TTL at {@code now}. */
    public synchronized List<E> expire(long now) {
        List<E> out = new ArrayList<>();
        if (ttlEntries == 0) {
            return out;
        }
        for (E e : all.values()) {
            if (e.expired(now)) {
                out.add(e);
            }
        }
        for (E e : out) {
            remove(e);
        }
        return out;
    }

    /** Unpinned entries, coldest first: probation, then protected. */
    private Iterator<E> victims() {
        Iterator<E> a = segments[PROBATION].values().iterator();
        Iterator<E> b = segments[PROTECTED].values().iterator();
        return new Iterator<>() {
            @Override
            public boolean hasNext() {
                return a.hasNext() || b.hasNext();
            }

            @Override
            public E next() {
                return a.hasNext() ? a.next() : b.next();
            }
        };
    }

    // ---- segments ----

    private void place(E e, int segment) {
        e.segment = segment;
        segments[segment].put(e.key(), e);
        if (segment == PINNED) {
            pinnedBytes += e.footprint();
        } else if (segment == PROTECTED) {
            protectedBytes += e.footprint();
        }
    }

    private void unplace(E e) {
        segments[e.segment].remove(e.key());
        if (e.segment == PINNED) {
            pinnedBytes -= e.footprint();
        } else if (e.segment == PROTECTED) {
            protectedBytes -= e.footprint();
        }
    }

    // ---- views ----

    public synchronized long usedBytes() {
        return usedBytes;
    }

    public synchronized long pinnedBytes() {
        return pinnedBytes;
    }

    public synchronized int size() {
        return all.size();
    }
}
