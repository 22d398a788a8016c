package io.strata.cli;

import io.strata.protocol.meta.MetaMessages;
import static org.assertj.core.api.Assertions.assertThat;

import io.strata.config.ConfigNode;
import io.strata.core.InodeId;
import io.strata.core.NodeContext;
import io.strata.core.rpc.RpcClient;
import io.strata.core.rpc.RpcOptions;
import io.strata.core.util.Futures;
import io.strata.protocol.meta.Caller;
import io.strata.protocol.meta.InodeAttrs;
import io.strata.protocol.meta.MetaClient;
import io.strata.namespace.service.MetaConfig;
import io.strata.namespace.service.MetaServer;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code strata policy set|get|explain} against a real meta service on loopback. */
class PolicyCliTest {
    @TempDir
    Path tmp;

    @Test
    void setGetAndExplainShowValuesAndTheirSources() {
        ConfigNode cfg = ConfigNode.parse("""
                [node]
                listen = "127.0.0.1:0"
                data = "%s"
                [meta.lmdb]
                sync = false
                map-size = "64MiB"
                [[meta.chain-tables]]
                id = 1
                replicas = 3
                chains = [1, 2, 3]
                [[meta.chain-tables]]
                id = 2
                replicas = 2
                chains = [4, 5]
                """.formatted(tmp), "meta.toml");
        try (NodeContext ctx = NodeContext.seeded("meta-cli", 3);
             MetaServer server = MetaServer.start(ctx, MetaConfig.read(cfg), null, null);
             RpcClient rpc = new RpcClient(ctx, MetaMessages.PROTOCOL, RpcOptions.DEFAULTS)) {
            String addr = "127.0.0.1:" + server.address().getPort();
            MetaClient c = new MetaClient(ctx, rpc, List.of(server.address()));
            InodeAttrs ckpt = Futures.join(c.mkdirAsync(Caller.ROOT, InodeId.ROOT, "ckpt", 0755, null));
            Futures.join(c.mkdirAsync(Caller.ROOT, ckpt.id(), "run1", 0755, null));

            CliTest.Run set = CliTest.strata("policy", "set", "/ckpt", "replicas=2", "qos=checkpoint", "--meta", addr);
            assertThat(set.code()).as(set.err()).isZero();
            assertThat(set.out()).contains("updated /ckpt").containsPattern("replicas +\\| +2 \\| yes");

            CliTest.Run explain = CliTest.strata("policy", "explain", "/ckpt/run1", "--meta", addr);
            assertThat(explain.code()).as(explain.err()).isZero();
            assertThat(explain.out()).containsPattern("replicas +\\| +2 +\\| /ckpt")
                    .containsPattern("qos +\\| checkpoint +\\| /ckpt").containsPattern("stripe.width +\\| +4 +\\| default");

            CliTest.Run get = CliTest.strata("policy", "get", "/ckpt/run1", "--meta", addr);
            assertThat(get.out()).contains("policy of /ckpt/run1").doesNotContain("yes");

            // a file created under it shows the policy and layout fixed at create
            Futures.join(c.createAsync(Caller.ROOT, Futures.join(c.resolveAsync(Caller.ROOT, "/ckpt/run1")).id(), "shard", 0644, true, null));
            CliTest.Run file = CliTest.strata("policy", "get", "/ckpt/run1/shard", "--meta", addr);
            assertThat(file.out()).contains("is a file").contains("table 2 v1, 2 replicas");

            CliTest.Run bad = CliTest.strata("policy", "set", "/ckpt", "replicas=9", "--meta", addr);
            assertThat(bad.code()).isEqualTo(1);
            assertThat(bad.err()).contains("replicas").contains("between 1 and 5");
            assertThat(CliTest.strata("policy", "set", "/ckpt", "--meta", addr).code()).isEqualTo(2);
        }
    }
}
