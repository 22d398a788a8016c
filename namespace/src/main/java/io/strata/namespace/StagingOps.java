package io.strata.namespace;

import io.strata.core.InodeId;
import io.strata.core.Status;
import io.strata.core.StrataException;
import io.strata.namespace.kv.Bytes;
import io.strata.namespace.kv.KeyValue;
import io.strata.protocol.meta.InodeAttrs;
import io.strata.protocol.meta.Staging;
import java.util.ArrayList;
import java.util.List;

/**
 * The L2 staging records (docs/internals/l2.md), one transaction per operation like every
 * namespace operation. A record lives next to its file and goes when the file is destroyed.
 */
final class StagingOps {
    private StagingOps() {
    }

    static Staging open(NsTx t, InodeId inode, int placementVersion, int replicas, List<Staging.Candidate> proposed, long nowMillis) {
        InodeAttrs a = requireFile(t, inode);
        Staging s = t.staging(a.id());
        if (s != null && (s.undrained() || s.state() == Staging.State.LOST || t.hasSessions(a.id()))) {
            return s; // writes go on in the current epoch, on its candidates (an open session may have unpublished writes)
        }
        if (proposed.isEmpty()) {
            throw new StrataException(Status.NOT_SERVING, "no L2 agent serves: " + inode + " cannot be staged");
        }
        if (replicas < 1 || replicas > 8) {
            throw new StrataException(Status.INVALID_ARGUMENT, "l2 replicas must be 1..8, got " + replicas);
        }
        Staging next = Staging.begin(a.id(), s == null ? 1 : s.epoch() + 1, placementVersion, replicas, proposed, nowMillis);
        t.putStaging(next);
        return next;
    }

    static Staging publish(NsTx t, InodeId inode, long epoch, Staging.Delta delta, long nowMillis) {
        Staging s = require(t, inode);
        if (s.epoch() != epoch) {
            throw new StrataException(Status.INVALID_ARGUMENT, "staging epoch " + epoch + " of " + inode + " is over (now " + s.epoch() + ")");
        }
        Staging next = s.publish(delta, nowMillis);
        t.putStaging(next);
        return next;
    }

    static Staging drained(NsTx t, InodeId inode, long epoch, long version, boolean durable, long nowMillis) {
        Staging s = require(t, inode);
        if (epoch != s.epoch() || version > s.publishVersion()) {
            throw new StrataException(Status.INVALID_ARGUMENT, "drain report for " + inode + " epoch " + epoch + " publish " + version
                    + " does not match its record (epoch " + s.epoch() + ", publish " + s.publishVersion() + ")");
        }
        Staging next = s.drained(version, durable, nowMillis);
        if (!next.equals(s)) {
            t.putStaging(next);
        }
        return next;
    }

    static Staging lost(NsTx t, InodeId inode, String why) {
        Staging s = require(t, inode);
        if (s.state() == Staging.State.LOST) {
            return s;
        }
        Staging next = s.markLost(why);
        t.putStaging(next);
        return next;
    }

    static List<Staging> list(NsTx t, boolean pendingOnly, long after, int limit) {
        byte[] from = after == 0 ? KeySpace.STAGING.prefix() : Bytes.keyAfter(KeySpace.staging(InodeId.of(after)));
        List<Staging> out = new ArrayList<>();
        byte[] start = from;
        while (out.size() < limit) {
            List<KeyValue> page = t.reader.getRange(start, KeySpace.STAGING.end(), 256);
            for (KeyValue kv : page) {
                Staging s = Staging.decode(io.netty.buffer.Unpooled.wrappedBuffer(kv.value()));
                if (!pendingOnly || s.undrained() || s.state() == Staging.State.LOST) {
                    out.add(s);
                    if (out.size() >= limit) {
                        break;
                    }
                }
            }
            if (page.size() < 256) {
                break;
            }
            start = Bytes.keyAfter(page.get(page.size() - 1).key());
        }
        return out;
    }

    private static Staging require(NsTx t, InodeId inode) {
        Staging s = t.staging(inode);
        if (s == null) {
            throw new StrataException(Status.NOT_FOUND, inode + " has no staging record");
        }
        return s;
    }

    private static InodeAttrs requireFile(NsTx t, InodeId inode) {
        InodeAttrs a = t.requireInode(inode);
        if (!a.isFile()) {
            throw new StrataException(Status.INVALID_ARGUMENT, inode + " is not a regular file");
        }
        return a;
    }
}
