package io.strata.client;

import io.strata.config.policy.Consistency;
import io.strata.config.policy.Durability;
import io.strata.config.policy.L2Mode;
import io.strata.config.policy.Policy;
import io.strata.config.policy.PolicyOverrides;
import io.strata.core.tier.CacheHints;
import io.strata.core.tier.IoOptions;
import io.strata.core.tier.QosClass;
import io.strata.core.tier.StageHints;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;

/**
 * A file's effective policy (recorded in its inode at create: every field) and what it means for
 * each I/O: the {@link CacheHints} cache tiers see, the {@link StageHints} the L2 tier sees, and
 * the {@link IoOptions} every tier call gets. strict bypasses client caches; write-back, pin and
 * ttl come from the policy as they are; {@code tiers.l2 = stage} stages the file in L2 with
 * {@code l2.replicas} copies of each chunk, and {@code durability = l2} lets fsync and close
 * return once all of them are on stable storage.
 */
record FilePolicy(Policy policy, CacheHints hints, StageHints stage) {

    private static final Map<Map<String, String>, FilePolicy> PARSED = new ConcurrentHashMap<>();

    /** Parses a file's policy map (cached: files of one directory share one map). */
    /** A file under {@code consistency = immutable} that its first writer already published: it takes no new bytes. */
    static boolean writtenImmutable(io.strata.protocol.meta.InodeAttrs a) {
        return of(a.policy()).consistency() == io.strata.config.policy.Consistency.IMMUTABLE && (a.dataVersion() > 1 || a.length() > 0);
    }

    static FilePolicy of(Map<String, String> stored) {
        FilePolicy p = PARSED.get(stored);
        if (p != null) {
            return p;
        }
        Policy policy = Policy.DEFAULT.with(PolicyOverrides.fromMap(stored));
        p = new FilePolicy(policy, hintsOf(policy), stageOf(policy));
        if (PARSED.size() < 4096) {
            PARSED.put(Map.copyOf(stored), p);
        }
        return p;
    }

    static CacheHints hintsOf(Policy p) {
        if (p.consistency() == Consistency.STRICT) {
            return CacheHints.BYPASS;
        }
        return new CacheHints(true, p.writeBack(), p.writeBackMaxAge(), p.writeBackMaxBytes().bytes(), p.pin(), p.ttl());
    }

    static StageHints stageOf(Policy p) {
        if (p.l2() != L2Mode.STAGE) {
            return StageHints.NONE;
        }
        return new StageHints(true, p.durability() == Durability.L2, p.l2Replicas());
    }

    Consistency consistency() {
        return policy.consistency();
    }

    boolean strict() {
        return policy.consistency() == Consistency.STRICT;
    }

    /**
     * The options of an I/O of this file. {@code jobQos}, the client's job class ({@code [client]
     * job-qos}), replaces the policy's class where that is {@code interactive} (the default, which
     * names no particular workload); a directory that names its class keeps it, so a job's
     * checkpoint directory stays {@code checkpoint} whatever the job's class.
     */
    IoOptions io(long dataVersion, Duration timeout, Optional<QosClass> jobQos) {
        QosClass q = policy.qos() == QosClass.INTERACTIVE ? jobQos.orElse(QosClass.INTERACTIVE) : policy.qos();
        return new IoOptions(dataVersion, q, timeout, hints, stage, policy.minAck());
    }
}
