package io.strata.namespace;

import static org.assertj.core.api.Assertions.assertThat;

import io.strata.namespace.kv.Bytes;
import io.strata.protocol.meta.Caller;
import io.strata.protocol.meta.Codec;
import io.strata.protocol.meta.InDir;
import io.strata.protocol.meta.InodeAttrs;
import io.strata.protocol.meta.OpenFlags;
import io.strata.protocol.meta.OpenResult;
import io.strata.protocol.meta.RequestId;
import io.strata.protocol.meta.SetAttr;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * unlink, rmdir, create-open, mkdir and symlink answer the directory they changed exactly as a getattr right
 * after reads it (times moved on, link count, a later explicit time kept), so that a client may
 * keep that answer in place of the attributes its change made stale.
 */
class DirAfterChangeTest extends MetaFixture {
    @Test
    void eachChangeAnswersTheDirectoryAsAGetattrRightAfterReadsIt() {
        InodeAttrs d = mkdir(ROOT, "d");
        mkdir(d.id(), "sub1");
        mkdir(d.id(), "sub2");
        create(d.id(), "a");
        create(d.id(), "b");

        InodeAttrs afterUnlink = join(meta.unlinkAsync(Caller.ROOT, d.id(), "a", req()));
        assertThat(afterUnlink).isEqualTo(stat(d.id()));

        InodeAttrs afterRmdir = join(meta.rmdirAsync(Caller.ROOT, d.id(), "sub1", req()));
        assertThat(afterRmdir.nlink()).as("2 + the one subdirectory left").isEqualTo(3);
        assertThat(afterRmdir).isEqualTo(stat(d.id()));
        assertThat(afterRmdir.mtimeNanos()).as("the removal moved the times on").isGreaterThan(afterUnlink.mtimeNanos());

        OpenResult made = join(meta.createOpenAsync(Caller.ROOT, d.id(), "c", 0644, true, OpenFlags.WRITE, 7, req()));
        assertThat(made.dir()).isEqualTo(stat(d.id()));
        assertThat(made.dir().mtimeNanos()).isGreaterThan(afterRmdir.mtimeNanos());

        OpenResult found = join(meta.createOpenAsync(Caller.ROOT, d.id(), "c", 0644, false, OpenFlags.READ, 7, req()));
        assertThat(found.dir()).as("found, not created: the directory unchanged").isEqualTo(made.dir()).isEqualTo(stat(d.id()));

        InDir sub = join(meta.mkdirInAsync(Caller.ROOT, d.id(), "sub3", 0755, req()));
        assertThat(sub.dir().nlink()).as("a subdirectory more").isEqualTo(4);
        assertThat(sub.dir()).isEqualTo(stat(d.id()));
        assertThat(sub.attrs()).isEqualTo(stat(sub.attrs().id()));
        assertThat(sub.dir().mtimeNanos()).isGreaterThan(made.dir().mtimeNanos());

        InDir link = join(meta.symlinkInAsync(Caller.ROOT, d.id(), "l", "sub3", req()));
        assertThat(link.dir()).isEqualTo(stat(d.id()));
        assertThat(link.dir().mtimeNanos()).isGreaterThan(sub.dir().mtimeNanos());

        long ahead = System.currentTimeMillis() * 1_000_000 + TimeUnit.HOURS.toNanos(1);
        join(meta.setattrAsync(Caller.ROOT, d.id(), SetAttr.times(null, ahead), req()));
        InodeAttrs kept = join(meta.unlinkAsync(Caller.ROOT, d.id(), "b", req()));
        assertThat(kept.mtimeNanos()).as("an mtime set ahead stays: the later of the two").isEqualTo(ahead);
        assertThat(kept).isEqualTo(stat(d.id()));
    }

    @Test
    void aRetriedChangeAnswersWhatTheFirstAnswered() {
        InodeAttrs d = mkdir(ROOT, "d");
        create(d.id(), "a");
        mkdir(d.id(), "s");
        RequestId r = req();
        InodeAttrs first = join(meta.unlinkAsync(Caller.ROOT, d.id(), "a", r));
        create(d.id(), "later"); // the directory moves on; the retry still gets the first answer
        assertThat(join(meta.unlinkAsync(Caller.ROOT, d.id(), "a", r))).isEqualTo(first);

        RequestId o = req();
        OpenResult made = join(meta.createOpenAsync(Caller.ROOT, d.id(), "n", 0644, true, OpenFlags.WRITE, 7, o));
        OpenResult again = join(meta.createOpenAsync(Caller.ROOT, d.id(), "n", 0644, true, OpenFlags.WRITE, 7, o));
        assertThat(again.dir()).isEqualTo(made.dir());
        assertThat(again.sessionId()).isEqualTo(made.sessionId());

        RequestId mk = req();
        InDir first1 = join(meta.mkdirInAsync(Caller.ROOT, d.id(), "m", 0755, mk));
        assertThat(join(meta.mkdirInAsync(Caller.ROOT, d.id(), "m", 0755, mk))).isEqualTo(first1);

        RequestId rm = req();
        InodeAttrs gone = join(meta.rmdirAsync(Caller.ROOT, d.id(), "s", rm));
        assertThat(join(meta.rmdirAsync(Caller.ROOT, d.id(), "s", rm))).isEqualTo(gone);
    }

    @Test
    void aRetryAnsweredFromARecordThatKeptNoDirectoryReadsTheDirectoryThen() {
        InodeAttrs d = mkdir(ROOT, "d");
        create(d.id(), "a");
        RequestId r = req();
        RequestId m = req();
        InodeAttrs made = mkdir(d.id(), "old");
        // records as the version before wrote them: an unlink's held nothing, a mkdir's the new directory only
        kv.run(tx -> {
            tx.set(KeySpace.idempotency(r), Bytes.le64(System.currentTimeMillis()));
            tx.set(KeySpace.idempotency(m), Bytes.concat(Bytes.le64(System.currentTimeMillis()), Codec.inodeBytes(made)));
            return null;
        });
        assertThat(join(meta.unlinkAsync(Caller.ROOT, d.id(), "a", r))).isEqualTo(stat(d.id()));
        assertThat(stat(d.id()).nlink()).isEqualTo(3);
        assertThat(lookup(d.id(), "a")).as("the record answered: nothing was removed").isNotNull();
        InDir again = join(meta.mkdirInAsync(Caller.ROOT, d.id(), "old", 0755, m));
        assertThat(again.attrs()).isEqualTo(made);
        assertThat(again.dir()).isEqualTo(stat(d.id()));
    }
}
