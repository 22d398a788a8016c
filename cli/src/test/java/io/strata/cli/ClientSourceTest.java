package io.strata.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.strata.cli.ClientSource.Cluster;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;

/**
 * How a client command finds its cluster: --config, --mgmtd, --data, then $STRATA_MGMTD,
 * $STRATA_DATA, then `strata up`'s default data directory; a flag beats a variable. And the one
 * message every client command gives when there is no cluster where it looked.
 */
class ClientSourceTest {
    @TempDir
    Path tmp;

    @Command
    static final class Holder {
        @Mixin
        ClientSource source;
    }

    /** The cluster {@code args} name, with {@code env} as the environment. */
    private static Cluster find(Map<String, String> env, String... args) {
        Holder h = new Holder();
        new CommandLine(h).parseArgs(args);
        return h.source.cluster(env::get);
    }

    private static Path local(Cluster c) {
        assertThat(c).isInstanceOf(Cluster.Local.class);
        return ((Cluster.Local) c).dir().root;
    }

    @Test
    void withoutFlagsOrVariablesItIsTheLocalClusterOfTheDefaultDataDirectory() {
        assertThat(local(find(Map.of()))).isEqualTo(ClusterDir.resolve(null, k -> null).root);
    }

    @Test
    void theVariablesNameTheClusterWhenNoFlagDoes() {
        assertThat(local(find(Map.of("STRATA_DATA", "/srv/strata")))).isEqualTo(Path.of("/srv/strata"));
        assertThat(find(Map.of("STRATA_MGMTD", "m1:9200,m2:9200"))).isEqualTo(new Cluster.Managers("m1:9200,m2:9200"));
        assertThat(find(Map.of("STRATA_MGMTD", "m1:9200", "STRATA_DATA", "/srv/strata"))).as("a manager beats a data directory")
                .isEqualTo(new Cluster.Managers("m1:9200"));
        assertThat(local(find(Map.of("STRATA_MGMTD", " ", "STRATA_DATA", "/srv/strata")))).as("a blank variable is unset")
                .isEqualTo(Path.of("/srv/strata"));
    }

    @Test
    void aFlagBeatsAVariable() {
        Map<String, String> env = Map.of("STRATA_MGMTD", "env-mgmtd:9200", "STRATA_DATA", "/env/data");
        assertThat(local(find(env, "--data", "/flag/data"))).as("--data over $STRATA_MGMTD").isEqualTo(Path.of("/flag/data"));
        assertThat(find(env, "--mgmtd", "flag-mgmtd:9200")).isEqualTo(new Cluster.Managers("flag-mgmtd:9200"));
        assertThat(find(env, "--config", "/etc/strata/client.toml")).isEqualTo(new Cluster.ConfigFile(Path.of("/etc/strata/client.toml")));
    }

    @Test
    void amongFlagsConfigBeatsMgmtdWhichBeatsData() {
        assertThat(find(Map.of(), "--config", "c.toml", "--mgmtd", "m:1", "--data", "/d")).isEqualTo(new Cluster.ConfigFile(Path.of("c.toml")));
        assertThat(find(Map.of(), "--mgmtd", "m:1", "--data", "/d")).isEqualTo(new Cluster.Managers("m:1"));
    }

    @Test
    void metaOverridesTheMetaServiceOfTheClusterFound() throws Exception {
        Path data = tmp.resolve("data");
        java.nio.file.Files.createDirectories(data);
        java.nio.file.Files.writeString(data.resolve(ClientSource.CLIENT_TOML), """
                [client]
                meta = ["127.0.0.1:9300"]
                mgmtd = ["127.0.0.1:9200"]
                """);
        Holder h = new Holder();
        new CommandLine(h).parseArgs("--data", data.toString(), "--meta", "127.0.0.1:9301,127.0.0.1:9302");
        assertThat(h.source.load().config().meta()).extracting(a -> a.getPort()).containsExactly(9301, 9302);
        assertThat(h.source.load().config().mgmtd()).extracting(a -> a.getPort()).containsExactly(9200);
        new CommandLine(h = new Holder()).parseArgs("--data", data.toString());
        assertThat(h.source.load().config().meta()).extracting(a -> a.getPort()).containsExactly(9300);
    }

    @Test
    void everyClientCommandSaysWhereItLookedForACluster() {
        String d = "--data=" + tmp;
        List<List<String>> commands = List.of(List.of("ls", "/"), List.of("stat", "/x"), List.of("cat", "/x"), List.of("put", "f", "/x"),
                List.of("cp", "strata:/a", "b"), List.of("rm", "/x"), List.of("mkdir", "/x"), List.of("policy", "get", "/"),
                List.of("policy", "set", "/", "replicas=2"), List.of("policy", "explain", "/"), List.of("admin", "nodes"),
                List.of("admin", "create-table"));
        for (List<String> c : commands) {
            String[] args = java.util.stream.Stream.concat(c.stream(), java.util.stream.Stream.of(d)).toArray(String[]::new);
            CliTest.Run r = CliTest.strata(args);
            assertThat(r.code()).as(String.join(" ", c)).isEqualTo(1);
            assertThat(r.err().strip()).as(String.join(" ", c)).isEqualTo("strata: no cluster to talk to: no `strata up` cluster in " + tmp
                    + "; start one with `strata up` (--data DIR or $STRATA_DATA for another directory), or name a cluster with"
                    + " --mgmtd HOST:PORT (or $STRATA_MGMTD) or --config FILE");
        }
    }
}
