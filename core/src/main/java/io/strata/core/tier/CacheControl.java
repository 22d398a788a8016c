package io.strata.core.tier;

import io.strata.core.InodeId;
import java.util.Map;
import java.util.concurrent.CompletableFuture;

/**
 * A facet of a caching tier ({@link Tier#facet}): what it holds and a way to empty it, for
 * {@code strata cache stat|drop}. Reports are ordered {@code key -> value} maps that tools show
 * as {@code key=value} lines; each cache tier documents its keys.
 */
public interface CacheControl {
    /** The cache's name (its config's), as reports and metrics tag it. */
    String name();

    /** What the whole cache holds and has served since it opened. */
    Map<String, Object> report();

    /** What the cache holds of one file (all its data versions). */
    Map<String, Object> report(InodeId inode);

    /** Empties the cache of one file; writes it absorbed are flushed first (a drop never loses a write). */
    CompletableFuture<Void> dropAsync(InodeId inode);

    /** Empties the whole cache, flushing absorbed writes first. */
    CompletableFuture<Void> dropAllAsync();
}
