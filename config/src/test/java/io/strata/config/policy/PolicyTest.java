package io.strata.config.policy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.strata.core.DataSize;
import io.strata.core.tier.QosClass;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class PolicyTest {
    private static PolicyOverrides set(String... kv) {
        return PolicyOverrides.parse(List.of(kv));
    }

    @Test
    void childrenInheritWhatTheyDoNotOverride() {
        var eff = PolicyResolver.resolve(Policy.DEFAULT, List.of(
                new PolicyResolver.Level("/", PolicyOverrides.NONE),
                new PolicyResolver.Level("/ckpt", set("tiers.l2=stage", "durability=l2", "qos=checkpoint")),
                new PolicyResolver.Level("/ckpt/run7", set("stripe.chunk-size=4MiB", "stripe.width=16"))));
        Policy p = eff.policy();
        assertThat(p.chunkSize()).isEqualTo(DataSize.ofMiB(4));
        assertThat(p.stripeWidth()).isEqualTo(16);
        assertThat(p.durability()).isEqualTo(Durability.L2);
        assertThat(p.qos()).isEqualTo(QosClass.CHECKPOINT);
        assertThat(p.replicas()).isEqualTo(Policy.DEFAULT.replicas());
        assertThat(eff.sources()).contains(
                new PolicyResolver.Source(PolicyField.DURABILITY, "l2", "/ckpt"),
                new PolicyResolver.Source(PolicyField.STRIPE_CHUNK_SIZE, "4MiB", "/ckpt/run7"),
                new PolicyResolver.Source(PolicyField.REPLICAS, "3", "default"));
    }

    @Test
    void aDeeperLevelWinsAndInheritRemovesAnOverride() {
        PolicyOverrides o = set("replicas=2", "pin=on").with("pin", "inherit");
        assertThat(o.toMap()).isEqualTo(Map.of("replicas", "2"));
        var eff = PolicyResolver.resolve(Policy.DEFAULT, List.of(
                new PolicyResolver.Level("/a", set("replicas=2")),
                new PolicyResolver.Level("/a/b", set("replicas=5"))));
        assertThat(eff.policy().replicas()).isEqualTo(5);
    }

    @Test
    void badValuesNameTheFieldAndTheRule() {
        assertThatThrownBy(() -> set("stripe.chunk-size=3MiB"))
                .isInstanceOf(PolicyException.class)
                .hasMessage("stripe.chunk-size: must be a power of two between 64KiB and 64MiB, got 3MiB");
        assertThatThrownBy(() -> set("stripe.chunk-size=128MiB")).hasMessageContaining("between 64KiB and 64MiB");
        assertThatThrownBy(() -> set("replicas=0")).hasMessage("replicas: must be between 1 and 5, got 0");
        assertThatThrownBy(() -> set("replicas=three")).hasMessageContaining("replicas: bad value \"three\"");
        assertThatThrownBy(() -> set("consistency=eventual")).hasMessageContaining("strict | close-to-open | immutable");
        assertThatThrownBy(() -> set("colour=blue")).hasMessageContaining("unknown policy field");
        assertThatThrownBy(() -> set("replicas")).hasMessageContaining("expected key=value");
        assertThatThrownBy(() -> set("write-back.max-age=2h")).hasMessageContaining("between 10ms and 1h");
        assertThatThrownBy(() -> set("l2.replicas=0")).hasMessage("l2.replicas: must be between 1 and 5, got 0");
        assertThatThrownBy(() -> set("l2.replicas=6")).hasMessage("l2.replicas: must be between 1 and 5, got 6");
    }

    @Test
    void l2CopiesDefaultToTwoAndAreInherited() {
        assertThat(Policy.DEFAULT.l2Replicas()).isEqualTo(2);
        var eff = PolicyResolver.resolve(Policy.DEFAULT, List.of(
                new PolicyResolver.Level("/ckpt", set("tiers.l2=stage", "l2.replicas=3")),
                new PolicyResolver.Level("/ckpt/run7", set("durability=l2"))));
        assertThat(eff.policy().l2Replicas()).isEqualTo(3);
        assertThat(PolicyField.L2_REPLICAS.get(eff.policy())).isEqualTo("3");
    }

    @Test
    void combinationsAreCheckedWithTheDirectoryThatBrokeThem() {
        assertThatThrownBy(() -> PolicyResolver.resolve(Policy.DEFAULT,
                List.of(new PolicyResolver.Level("/data", set("durability=l2")))))
                .hasMessageContaining("in /data").hasMessageContaining("durability = l2 needs tiers.l2 = stage");
        assertThatThrownBy(() -> Policy.DEFAULT.with(set("tiers.l1=off", "write-back=on")))
                .hasMessageContaining("write-back = on needs tiers.l1 = on");
        // setting both sides in one change is fine in any order of fields
        Policy staged = Policy.DEFAULT.with(set("durability=l2", "tiers.l2=stage"));
        Policy back = staged.with(set("tiers.l2=off", "durability=l3"));
        assertThat(back.l2()).isEqualTo(L2Mode.OFF);
    }

    @Test
    void storedOverridesRoundTripInCanonicalSpelling() {
        PolicyOverrides o = set("stripe.chunk-size=4096KiB", "tiers.l1=false", "ttl=7d", "write-back.max-age=PT30S");
        assertThat(o.toMap()).containsEntry("stripe.chunk-size", "4MiB").containsEntry("tiers.l1", "off")
                .containsEntry("ttl", "7d").containsEntry("write-back.max-age", "30s");
        assertThat(PolicyOverrides.fromMap(o.toMap())).isEqualTo(o);
        assertThat(Policy.DEFAULT.with(o).ttl()).contains(Duration.ofDays(7));
        assertThat(o.toString()).isEqualTo("stripe.chunk-size=4MiB tiers.l1=off write-back.max-age=30s ttl=7d");
    }

    @Test
    void everyFieldPrintsAndParsesBack() {
        for (PolicyField f : PolicyField.values()) {
            String printed = f.get(Policy.DEFAULT);
            assertThat(f.normalize(printed)).as(f.key()).isEqualTo(printed);
        }
    }
}
