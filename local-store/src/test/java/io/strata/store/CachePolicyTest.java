package io.strata.store;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * The eviction and admission policy: entries used again outlive entries used once, a scan
 * cannot push out a hot set, pinned entries are never evicted for room and never exceed the
 * capacity, TTL expires idle entries, and the free-space floor drives admission and eviction
 * like the capacity does.
 */
class CachePolicyTest {
    static final long FP = 100;

    static final class E extends CacheEntry<Long> {
        E(long key, boolean pinned, long ttlNanos, long now) {
            super(key, FP, pinned, ttlNanos, now);
        }
    }

    final AtomicLong usable = new AtomicLong(Long.MAX_VALUE / 4);

    CachePolicy<Long, E> policy(long capacity, long floor) {
        return new CachePolicy<>(new SpaceBudget(capacity, floor, usable::get), 64, k -> k * 0x9E3779B97F4A7C15L);
    }

    /** Admits and indexes {@code k} as a store would; returns the admission. */
    static CachePolicy.Admission<E> offer(CachePolicy<Long, E> p, long k, boolean pinned) {
        CachePolicy.Admission<E> a = p.admit(k, FP, pinned);
        if (a.admitted()) {
            assertThat(p.addIfAbsent(new E(k, pinned, 0, 0))).isTrue();
        }
        return a;
    }

    @Test
    void anEntryUsedAgainOutlivesEntriesUsedOnce() {
        CachePolicy<Long, E> p = policy(10 * FP, 0);
        for (long k = 0; k < 10; k++) {
            assertThat(offer(p, k, false).victims()).isEmpty();
        }
        for (long k = 0; k < 5; k++) {
            assertThat(p.access(k, false, 0, 1).entry()).isNotNull(); // to the protected segment
        }
        p.access(10L, false, 0, 1);
        p.access(10L, false, 0, 1);
        CachePolicy.Admission<E> a = offer(p, 10, false);
        assertThat(a.admitted()).isTrue();
        assertThat(a.victims()).extracting(CacheEntry::key).containsExactly(5L); // probation's coldest
        assertThat(a.floorBound()).isFalse();
        assertThat(p.contains(5L)).isFalse();
        assertThat(p.size()).isEqualTo(10);
        assertThat(p.usedBytes()).isEqualTo(10 * FP);
    }

    @Test
    void aScanCannotPushOutAHotSet() {
        CachePolicy<Long, E> p = policy(10 * FP, 0);
        for (long k = 0; k < 5; k++) {
            offer(p, k, false);
            for (int i = 0; i < 5; i++) {
                p.access(k, false, 0, i);
            }
        }
        int refused = 0;
        for (long k = 100; k < 300; k++) {
            assertThat(p.access(k, false, 0, 10).entry()).isNull(); // a miss: seen once
            CachePolicy.Admission<E> a = offer(p, k, false);
            if (!a.admitted()) {
                assertThat(a.refusal()).isEqualTo(CachePolicy.Refusal.LESS_POPULAR);
                refused++;
            }
        }
        assertThat(refused).isGreaterThan(150);
        for (long k = 0; k < 5; k++) {
            assertThat(p.contains(k)).as("hot entry %d", k).isTrue();
        }
        assertThat(p.usedBytes()).isLessThanOrEqualTo(10 * FP);
    }

    @Test
    void pinnedEntriesAreNeverEvictedAndNeverExceedTheCapacity() {
        CachePolicy<Long, E> p = policy(10 * FP, 0);
        for (long k = 0; k < 6; k++) {
            offer(p, k, true);
        }
        for (long k = 10; k < 14; k++) {
            offer(p, k, false);
        }
        assertThat(p.pinnedBytes()).isEqualTo(6 * FP);
        // a pinned candidate skips the popularity test and evicts unpinned entries only
        CachePolicy.Admission<E> a = offer(p, 6, true);
        assertThat(a.admitted()).isTrue();
        assertThat(a.victims()).extracting(CacheEntry::key).containsExactly(10L);
        for (long k = 7; k < 10; k++) {
            assertThat(offer(p, k, true).admitted()).isTrue();
        }
        assertThat(p.pinnedBytes()).isEqualTo(10 * FP);
        assertThat(offer(p, 20, true).refusal()).isEqualTo(CachePolicy.Refusal.PINNED_OVER_CAPACITY);
        p.access(20L, false, 0, 1);
        p.access(20L, false, 0, 1);
        assertThat(offer(p, 20, false).refusal()).as("nothing unpinned left to evict").isEqualTo(CachePolicy.Refusal.NO_ROOM);
        // the floor can take nothing from pinned entries either
        usable.set(0);
        assertThat(p.evictToLimits().victims()).isEmpty();
        assertThat(p.size()).isEqualTo(10);
    }

    @Test
    void aPinTakenByAnAccessStaysWithinTheCapacity() {
        CachePolicy<Long, E> p = policy(3 * FP, 0);
        offer(p, 1, true);
        offer(p, 2, true);
        offer(p, 3, false);
        CachePolicy.Access<E> a = p.access(3L, true, 0, 1);
        assertThat(a.retagged()).isTrue();
        assertThat(a.entry().pinned()).isTrue();
        assertThat(p.pinnedBytes()).isEqualTo(3 * FP);
        p.access(2L, false, 0, 2); // unpinned by the access
        assertThat(p.pinnedBytes()).isEqualTo(2 * FP);
        assertThat(p.access(2L, false, 0, 3).retagged()).isFalse();
        // a store opened with a smaller capacity than it holds: pinning one more would pass it
        CachePolicy<Long, E> small = policy(2 * FP, 0);
        small.add(new E(1, true, 0, 0));
        small.add(new E(2, true, 0, 0));
        small.add(new E(3, false, 0, 0));
        CachePolicy.Access<E> b = small.access(3L, true, 5_000, 4);
        assertThat(b.retagged()).isTrue();
        assertThat(b.entry().pinned()).as("the pin is not taken").isFalse();
        assertThat(b.entry().ttlNanos()).as("the TTL is").isEqualTo(5_000);
        assertThat(small.pinnedBytes()).isEqualTo(2 * FP);
        assertThat(small.evictToLimits().victims()).extracting(CacheEntry::key).containsExactly(3L);
    }

    @Test
    void idleEntriesExpire() {
        CachePolicy<Long, E> p = policy(10 * FP, 0);
        assertThat(p.addIfAbsent(new E(1, false, 1000, 0))).isTrue();
        assertThat(p.addIfAbsent(new E(2, true, 1000, 0))).isTrue(); // TTL beats the pin
        assertThat(p.addIfAbsent(new E(3, false, 0, 0))).isTrue();
        assertThat(p.addIfAbsent(new E(3, false, 0, 0))).as("already indexed").isFalse();
        assertThat(p.access(1L, false, 1000, 999).entry()).isNotNull(); // used: idle time starts again
        assertThat(p.expire(1500)).extracting(CacheEntry::key).containsExactly(2L);
        CachePolicy.Access<E> late = p.access(1L, false, 1000, 1999);
        assertThat(late.entry()).isNull();
        assertThat(late.expired().key()).isEqualTo(1L);
        assertThat(p.contains(1L)).isFalse();
        assertThat(p.expire(Long.MAX_VALUE / 2)).isEmpty();
        assertThat(p.size()).isEqualTo(1);
    }

    @Test
    void theFreeSpaceFloorRefusesWritesAndStartsEviction() {
        CachePolicy<Long, E> p = policy(100 * FP, 10 * FP);
        usable.set(15 * FP);
        for (long k = 0; k < 5; k++) {
            assertThat(offer(p, k, false).admitted()).isTrue();
            usable.addAndGet(-FP); // every entry comes off the disk
        }
        CachePolicy.Admission<E> refused = p.admit(5L, FP, false);
        assertThat(refused.refusal()).isEqualTo(CachePolicy.Refusal.LESS_POPULAR);
        assertThat(refused.floorBound()).as("the floor, not the capacity, asked for room").isTrue();
        // something else takes 3 entries' worth of the disk: eviction gives it back
        usable.addAndGet(-3 * FP);
        CachePolicy.Eviction<E> ev = p.evictToLimits();
        assertThat(ev.floorBound()).isTrue();
        assertThat(ev.victims()).hasSize(3);
        assertThat(p.size()).isEqualTo(2);
        usable.addAndGet(3 * FP);
        assertThat(p.evictToLimits().victims()).isEmpty();
    }

    @Test
    void removalsTakeOnlyTheEntriesAskedFor() {
        CachePolicy<Long, E> p = policy(100 * FP, 0);
        List<E> all = new ArrayList<>();
        for (long k = 0; k < 10; k++) {
            E e = new E(k, k % 3 == 0, 0, 0);
            p.add(e);
            all.add(e);
        }
        assertThat(p.isCurrent(all.get(4))).isTrue();
        assertThat(p.remove(all.get(4))).isTrue();
        assertThat(p.remove(all.get(4))).isFalse();
        E again = new E(4, false, 0, 0);
        p.add(again);
        assertThat(p.isCurrent(all.get(4))).as("another entry under the same key").isFalse();
        assertThat(p.remove(all.get(4))).isFalse();
        assertThat(p.get(4L)).isSameAs(again);
        assertThat(p.removeAll(List.of(1L, 2L, 42L))).extracting(CacheEntry::key).containsExactly(1L, 2L);
        assertThat(p.matching(k -> k >= 8)).extracting(CacheEntry::key).containsExactlyInAnyOrder(8L, 9L);
        assertThat(p.removeIf(k -> k % 3 == 0)).extracting(CacheEntry::key).containsExactlyInAnyOrder(0L, 3L, 6L, 9L);
        assertThat(p.pinnedBytes()).isZero();
        assertThat(p.size()).isEqualTo(4);
        assertThat(p.usedBytes()).isEqualTo(4 * FP);
    }
}
