package io.strata.client;

import io.strata.config.policy.Consistency;
import io.strata.protocol.meta.InodeAttrs;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Attributes of files in {@code immutable} directories, kept without revalidation once the file
 * was closed after being written (data version past 1): such a file does not change, so reads
 * of it need no namespace call. Keyed by caller uid and path (permissions were checked on the
 * walk that found it).
 */
final class ImmutableAttrs {
    private record Key(int uid, String path) {
    }

    private static final int MAX_ENTRIES = 100_000;
    private final ConcurrentHashMap<Key, InodeAttrs> entries = new ConcurrentHashMap<>();

    InodeAttrs get(int uid, String path) {
        return entries.get(new Key(uid, path));
    }

    void offer(int uid, String path, InodeAttrs a) {
        if (!a.isFile() || a.dataVersion() <= 1 || FilePolicy.of(a.policy()).consistency() != Consistency.IMMUTABLE) {
            return;
        }
        if (entries.size() >= MAX_ENTRIES) {
            entries.clear();
        }
        entries.put(new Key(uid, path), a);
    }

    void invalidate(String path) {
        if (!entries.isEmpty()) {
            String prefix = path.equals("/") ? "/" : path + "/";
            entries.keySet().removeIf(k -> k.path.equals(path) || k.path.startsWith(prefix));
        }
    }
}
