package io.strata.config.policy;

import io.strata.core.DataSize;
import io.strata.core.tier.QosClass;
import java.time.Duration;
import java.util.Optional;

/**
 * The effective policy of a directory: every field has a value. New files take their layout
 * and behaviour from it at create time (docs/design.md, "Policies"). Built by applying
 * {@link PolicyOverrides} from the root down ({@link PolicyResolver}); the constructor checks
 * the combination, not only each field.
 *
 * @param chunkSize         stripe chunk size: a power of two in [64KiB, 64MiB]
 * @param stripeWidth       chains a file's chunks are spread over: 1..{@value #MAX_STRIPE_WIDTH}
 * @param replicas          replicas in L3 (picks the chain table): 1..5
 * @param l1                whether the client's L1 cache is used
 * @param l2                how the L2 pool is used
 * @param durability        where fsync/close waits for the bytes
 * @param consistency       caching contract
 * @param writeBack         whether L1 absorbs small writes
 * @param writeBackMaxAge   flush absorbed writes at the latest after this long
 * @param writeBackMaxBytes flush when this many bytes are absorbed for a file
 * @param qos               scheduling class on every tier
 * @param ttl               retention in L1 after last use (empty: until evicted)
 * @param pin               never evicted from the L1 NVMe tier while set
 * @param profile           the preset this directory takes ({@link Profile}); {@code checkpoint}
 *                          where it is set makes the directory a checkpoint root
 * @param keepLast          checkpoint retention: the newest committed generations kept
 * @param keepEvery         checkpoint retention: every K-th committed generation is kept too (0: off)
 * @param grace             checkpoint collection: how long an uncommitted generation with no writer stays
 * @param minAck            fewest L3 replicas that store a write before it is acknowledged: 1..5; a value above
 *                          {@code replicas} means every replica (the default 2 with {@code replicas = 1} is 1)
 * @param l2Replicas        copies of each chunk a file staged in L2 keeps, on distinct agents: 1..5
 */
public record Policy(DataSize chunkSize, int stripeWidth, int replicas, boolean l1, L2Mode l2,
                     Durability durability, Consistency consistency, boolean writeBack,
                     Duration writeBackMaxAge, DataSize writeBackMaxBytes, QosClass qos,
                     Optional<Duration> ttl, boolean pin, Profile profile, int keepLast, int keepEvery, Duration grace,
                     int minAck, int l2Replicas) {

    public static final int MAX_STRIPE_WIDTH = io.strata.core.tier.FileChunks.MAX_STRIPE_WIDTH;

    /** The root's policy when nobody set one. */
    public static final Policy DEFAULT = new Policy(DataSize.ofMiB(1), 4, 3, true, L2Mode.PREFETCH, Durability.L3,
            Consistency.CLOSE_TO_OPEN, false, Duration.ofSeconds(5), DataSize.ofMiB(4), QosClass.INTERACTIVE,
            Optional.empty(), false, Profile.NONE, 3, 0, Duration.ofHours(1), io.strata.core.tier.IoOptions.DEFAULT_MIN_ACK, 2);

    public Policy {
        PolicyField.STRIPE_CHUNK_SIZE.check(chunkSize);
        PolicyField.STRIPE_WIDTH.check(stripeWidth);
        PolicyField.REPLICAS.check(replicas);
        PolicyField.WRITE_BACK_MAX_AGE.check(writeBackMaxAge);
        PolicyField.WRITE_BACK_MAX_BYTES.check(writeBackMaxBytes);
        ttl.ifPresent(PolicyField.TTL::check);
        PolicyField.CHECKPOINT_KEEP_LAST.check(keepLast);
        PolicyField.CHECKPOINT_KEEP_EVERY.check(keepEvery);
        PolicyField.CHECKPOINT_GRACE.check(grace);
        PolicyField.REPLICAS_MIN_ACK.check(minAck);
        PolicyField.L2_REPLICAS.check(l2Replicas);
        if (durability == Durability.L2 && l2 != L2Mode.STAGE) {
            throw new PolicyException("durability", "durability = l2 needs tiers.l2 = stage (got tiers.l2 = " + l2.policyName() + ")");
        }
        if (writeBack && !l1) {
            throw new PolicyException("write-back", "write-back = on needs tiers.l1 = on");
        }
        if (writeBack && consistency == Consistency.STRICT) {
            throw new PolicyException("write-back", "write-back = on cannot be combined with consistency = strict");
        }
    }

    /** This policy with the overrides applied (each checked, then the whole); a profile they set applies first. */
    public Policy with(PolicyOverrides overrides) {
        if (overrides.isEmpty()) {
            return this;
        }
        overrides = overrides.withProfilePresets();
        java.util.EnumMap<PolicyField, Object> v = new java.util.EnumMap<>(PolicyField.class);
        for (PolicyField f : PolicyField.values()) {
            String raw = overrides.values().get(f);
            v.put(f, raw == null ? f.value(this) : f.parse(raw));
        }
        return PolicyField.build(v);
    }
}
