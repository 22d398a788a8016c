package io.strata.namespace;

import io.strata.protocol.meta.Caller;
import io.strata.protocol.meta.InodeAttrs;
import io.strata.protocol.meta.Layout;
import io.strata.protocol.meta.PolicyInfo;
import static org.assertj.core.api.Assertions.assertThat;

import io.strata.config.policy.PolicyResolver;
import io.strata.core.Status;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/** Policies are stored with directories, inherited at create, and fix each new file's layout. */
class PolicyLayoutTest extends MetaFixture {
    private static Map<String, PolicyInfo.Field> byKey(PolicyInfo p) {
        return p.effective().stream().collect(Collectors.toMap(PolicyInfo.Field::key, s -> s));
    }

    @Test
    void newFilesTakeTheirLayoutFromTheEffectivePolicyAtCreate() {
        InodeAttrs ckpt = mkdir(ROOT, "ckpt");
        InodeAttrs run = mkdir(ckpt.id(), "run1");
        join(meta.policySetAsync(Caller.ROOT, ckpt.id(), List.of("stripe.chunk-size=4MiB", "replicas=2"), req()));
        join(meta.policySetAsync(Caller.ROOT, run.id(), List.of("stripe.width=6"), req()));

        InodeAttrs f = create(run.id(), "shard-0");
        Layout l = f.layout();
        assertThat(l.chunkSize()).isEqualTo(4 << 20);
        assertThat(l.stripeWidth()).isEqualTo(6);
        assertThat(l.replicas()).isEqualTo(2);
        assertThat(l.tableId()).isEqualTo(2); // StaticChainTables.uniform: table r has r replicas
        assertThat(l.chains()).allSatisfy(c -> assertThat(c.value()).isBetween(2001, 2008));
        assertThat(f.policy()).containsEntry("replicas", "2").containsEntry("stripe.width", "6").containsEntry("consistency", "close-to-open");

        // explain: every field's value and the ancestor it came from
        Map<String, PolicyInfo.Field> ex = byKey(join(meta.policyGetAsync(Caller.ROOT, run.id())));
        assertThat(ex.get("stripe.chunk-size").value()).isEqualTo("4MiB");
        assertThat(ex.get("stripe.chunk-size").from()).isEqualTo("/ckpt");
        assertThat(ex.get("stripe.width").from()).isEqualTo("/ckpt/run1");
        assertThat(ex.get("qos").from()).isEqualTo("default");
        join(meta.policySetAsync(Caller.ROOT, ROOT, List.of("qos=checkpoint"), req()));
        assertThat(byKey(join(meta.policyGetAsync(Caller.ROOT, run.id()))).get("qos").from()).isEqualTo("/");

        // a change applies to files created afterwards; existing files keep their layout
        join(meta.policySetAsync(Caller.ROOT, ckpt.id(), List.of("stripe.chunk-size=1MiB", "replicas=inherit"), req()));
        assertThat(stat(f.id()).layout()).isEqualTo(l);
        InodeAttrs g = create(run.id(), "shard-1");
        assertThat(g.layout().chunkSize()).isEqualTo(1 << 20);
        assertThat(g.layout().replicas()).isEqualTo(3);
        assertThat(join(meta.policyGetAsync(Caller.ROOT, ckpt.id())).overrides()).containsOnlyKeys("stripe.chunk-size");
    }

    @Test
    void badPoliciesAreRefusedWithNothingWritten() {
        InodeAttrs d = mkdir(ROOT, "d");
        InodeAttrs f = create(ROOT, "file");
        assertFailsClean(Status.INVALID_ARGUMENT, () -> join(meta.policySetAsync(Caller.ROOT, d.id(), List.of("replicas=9"), req())));
        assertFailsClean(Status.INVALID_ARGUMENT, () -> join(meta.policySetAsync(Caller.ROOT, d.id(), List.of("no-such-field=1"), req())));
        assertFailsClean(Status.INVALID_ARGUMENT, () -> join(meta.policySetAsync(Caller.ROOT, d.id(), List.of("replicas"), req())));
        // a combination that does not fit what the directory inherits
        assertFailsClean(Status.INVALID_ARGUMENT, () -> join(meta.policySetAsync(Caller.ROOT, d.id(), List.of("durability=l2"), req())));
        assertFailsClean(Status.NOT_A_DIRECTORY, () -> join(meta.policySetAsync(Caller.ROOT, f.id(), List.of("replicas=2"), req())));
        join(meta.policySetAsync(Caller.ROOT, d.id(), List.of("tiers.l2=stage", "durability=l2"), req()));
        assertThat(join(meta.policyGetAsync(Caller.ROOT, d.id())).overrides()).containsEntry("durability", "l2");
    }

    @Test
    void aReplicaCountWithoutAChainTableCannotCreateFiles() {
        meta.close();
        meta = new MetaStore(ctx, kv, StaticChainTables.of(new ChainTables.Table(7, 3, 3,
                List.of(io.strata.core.ChainId.of(1), io.strata.core.ChainId.of(2)))), ChunkReclaimer.NONE, options());
        InodeAttrs d = mkdir(ROOT, "two");
        join(meta.policySetAsync(Caller.ROOT, d.id(), List.of("replicas=2"), req()));
        assertFailsClean(Status.UNSUPPORTED, () -> create(d.id(), "f"));
        InodeAttrs ok = create(ROOT, "three");
        assertThat(ok.layout().tableVersion()).isEqualTo(3);
        assertThat(ok.layout().stripeWidth()).isEqualTo(2); // the default width 4 capped at the table's 2 chains
    }
}
