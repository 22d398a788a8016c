package io.strata.namespace;

import io.strata.protocol.meta.Codec;
import io.strata.protocol.meta.InodeAttrs;
import static org.assertj.core.api.Assertions.assertThat;

import io.strata.core.InodeId;
import io.strata.namespace.kv.Bytes;
import io.strata.namespace.kv.KeyValue;
import io.strata.namespace.kv.KvStore;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * A consistency checker over the raw keyspace: every entry points to an inode of its type,
 * link counts of files, symlinks and special files equal their entries, directories have one
 * entry and a matching parent pointer, a directory that counts its subdirectories has a counter
 * equal to them, only devices carry a device number, every inode is reachable from the root (or
 * is an open, unlinked file), and the usage counters match.
 */
final class Fsck {
    private Fsck() {
    }

    static void check(KvStore kv) {
        List<KeyValue> inodes = kv.run(tx -> tx.getPrefix(KeySpace.INODE.prefix(), 0));
        List<KeyValue> dents = kv.run(tx -> tx.getPrefix(KeySpace.DENTRY.prefix(), 0));
        Map<InodeId, InodeAttrs> byId = new HashMap<>();
        Map<InodeId, Long> subdirCounters = new HashMap<>();
        long bytes = 0;
        for (KeyValue kv1 : inodes) {
            if (kv1.key().length == 12) {
                InodeAttrs a = Codec.inodeFrom(kv1.value());
                byId.put(a.id(), a);
                bytes += a.isFile() ? a.length() : 0;
                assertThat(a.rdev() == 0 || a.type().isDevice()).as("device number of %s %s", a.type(), a.id()).isTrue();
            } else if (kv1.key()[12] == KeySpace.SUBDIRS_SUFFIX) {
                subdirCounters.put(KeySpace.idAt(kv1.key()), Bytes.readLe64(kv1.value()));
            }
        }
        Map<InodeId, Long> subdirs = new HashMap<>();
        Map<InodeId, Integer> links = new HashMap<>();
        Map<InodeId, InodeId> dirParent = new HashMap<>();
        for (KeyValue d : dents) {
            InodeId parent = KeySpace.idAt(d.key());
            InodeId child = InodeId.of(Bytes.readLe64(d.value(), 0, 8));
            InodeAttrs c = byId.get(child);
            assertThat(c).as("entry %s/%s points to a missing inode %s", parent, KeySpace.nameAt(d.key()), child).isNotNull();
            assertThat(byId.get(parent)).as("entry in missing directory %s", parent).isNotNull();
            assertThat(byId.get(parent).isDirectory()).isTrue();
            assertThat(c.type()).isEqualTo(NsTx.typeOf(d.value()[8]));
            links.merge(child, 1, Integer::sum);
            if (c.isDirectory()) {
                subdirs.merge(parent, 1L, Long::sum);
                assertThat(dirParent.put(child, parent)).as("directory %s has two names", child).isNull();
                assertThat(c.parent()).as("parent pointer of %s", child).isEqualTo(parent);
                assertThat(c.name()).isEqualTo(KeySpace.nameAt(d.key()));
            }
        }
        for (InodeId counter : subdirCounters.keySet()) {
            assertThat(byId.get(counter)).as("subdirectory counter of %s, which is gone or not a directory", counter)
                    .matches(d -> d != null && NsTx.countsSubdirs(d));
        }
        for (InodeAttrs a : byId.values()) {
            if (NsTx.countsSubdirs(a)) {
                assertThat(subdirCounters.getOrDefault(a.id(), 0L)).as("subdirectory counter of %s", a.id())
                        .isEqualTo(subdirs.getOrDefault(a.id(), 0L));
            }
            if (a.id().equals(InodeId.ROOT)) {
                continue;
            }
            int n = links.getOrDefault(a.id(), 0);
            if (a.isDirectory()) {
                assertThat(n).as("names of directory %s", a.id()).isEqualTo(1);
            } else {
                assertThat((long) n).as("nlink of %s", a.id()).isEqualTo(a.nlink());
                if (n == 0) {
                    byte[] p = KeySpace.under(KeySpace.SESSION, a.id());
                    assertThat(kv.<List<KeyValue>>run(tx -> tx.getRange(p, Bytes.strinc(p), 1))).as("unlinked %s kept without a session", a.id()).isNotEmpty();
                }
            }
        }
        // every directory reaches the root without a cycle
        for (InodeId d : dirParent.keySet()) {
            Set<InodeId> seen = new HashSet<>();
            InodeId cur = d;
            while (!cur.equals(InodeId.ROOT)) {
                assertThat(seen.add(cur)).as("cycle through %s", cur).isTrue();
                cur = dirParent.get(cur);
                assertThat(cur).as("directory %s does not reach the root", d).isNotNull();
            }
        }
        assertThat(MetaFixture.counter(kv, KeySpace.STAT_INODES)).as("inode counter").isEqualTo(byId.size());
        assertThat(MetaFixture.counter(kv, KeySpace.STAT_BYTES)).as("byte counter").isEqualTo(bytes);
    }
}
