package io.strata.namespace;

import io.strata.core.InodeId;
import io.strata.core.Status;
import io.strata.core.StrataException;
import io.strata.core.tier.CachedCopies;
import io.strata.protocol.meta.Cached;
import io.strata.protocol.meta.InodeAttrs;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

/**
 * The records of prefetched files ({@link Cached}, docs/scheduler-hooks.md), one transaction per
 * request. A record lives next to its file: it goes when the file is destroyed, and it stops
 * being handed to readers the moment the file's data version moves on.
 */
final class CacheOps {
    private CacheOps() {
    }

    /** The copies an open of {@code a} returns: its record's, when the record holds the file's current data version. */
    static CachedCopies copiesOf(NsTx t, InodeAttrs a) {
        Cached.Record r = t.cached(a.id());
        return r != null && r.dataVersion() == a.dataVersion() ? r.copies() : null;
    }

    static Cached.Marked mark(NsTx t, long owner, List<Integer> agents, List<Cached.File> files) {
        check(files);
        if (owner <= 0) {
            throw new StrataException(Status.INVALID_ARGUMENT, "a prefetch owner is a hint id above 0, got " + owner);
        }
        if (agents.isEmpty()) {
            throw new StrataException(Status.INVALID_ARGUMENT, "prefetched copies need the agents they are placed among");
        }
        List<Cached.Record> out = new ArrayList<>();
        List<InodeId> stale = new ArrayList<>();
        for (Cached.File f : files) {
            InodeAttrs a = t.inode(f.inode());
            if (a == null || !a.isFile() || a.dataVersion() != f.dataVersion()) {
                stale.add(f.inode());
                continue;
            }
            Cached.Record now = t.cached(f.inode());
            Cached.Record next;
            if (now != null && now.dataVersion() == f.dataVersion()) {
                Set<Long> owners = new LinkedHashSet<>(now.owners());
                owners.add(owner);
                if (owners.size() > Cached.MAX_OWNERS) {
                    throw new StrataException(Status.INVALID_ARGUMENT, f.inode() + " is already held for " + Cached.MAX_OWNERS + " hints");
                }
                next = new Cached.Record(f.inode(), f.dataVersion(), now.agents(), List.copyOf(owners));
            } else {
                next = new Cached.Record(f.inode(), f.dataVersion(), agents, List.of(owner));
            }
            if (!next.equals(now)) {
                t.putCached(next);
            }
            out.add(next);
        }
        return new Cached.Marked(out, stale);
    }

    static void unmark(NsTx t, long owner, List<Cached.File> files) {
        check(files);
        for (Cached.File f : files) {
            Cached.Record now = t.cached(f.inode());
            if (now == null || !now.owners().contains(owner)) {
                continue;
            }
            List<Long> owners = new ArrayList<>(now.owners());
            owners.remove(owner);
            if (owners.isEmpty()) {
                t.clearCached(f.inode());
            } else {
                t.putCached(new Cached.Record(now.inode(), now.dataVersion(), now.agents(), owners));
            }
        }
    }

    static List<Cached.Record> get(NsTx t, List<Cached.File> files) {
        check(files);
        List<Cached.Record> out = new ArrayList<>();
        for (Cached.File f : files) {
            Cached.Record r = t.cached(f.inode());
            if (r != null) {
                out.add(r);
            }
        }
        return out;
    }

    private static void check(List<Cached.File> files) {
        if (files.size() > Cached.MAX_FILES) {
            throw new StrataException(Status.INVALID_ARGUMENT, "at most " + Cached.MAX_FILES + " files per request, got " + files.size());
        }
    }
}
