package io.strata.core.tier;

import java.util.List;

/**
 * A file's chunks held in the L2 pool as copies of what L3 holds at one data version, because a
 * scheduler announced that a job will read the file (a prefetch). Each chunk lives on the agent
 * the L2 placement function ranks first among {@code agents} for it; a reader that finds no copy
 * of that data version there reads L3, so a copy that was lost or evicted costs one round trip,
 * never a wrong byte.
 *
 * @param dataVersion the file's data version the copies hold; any other version is not read from them
 * @param agents      the agents (node ids) the file's chunks were placed among, in no order
 */
public record CachedCopies(long dataVersion, List<Integer> agents) {
    public CachedCopies {
        agents = List.copyOf(agents);
        if (agents.isEmpty()) {
            throw new IllegalArgumentException("cached copies need at least one agent");
        }
    }
}
