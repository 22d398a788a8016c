package io.strata.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.strata.core.StrataException;
import io.strata.store.AtomicFiles;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * How {@code strata prefetch} and the benches find the hooks server and the CA to verify it
 * with: flags beat variables, a local {@code strata up} cluster with TLS is reached over HTTPS
 * with its CA (over HTTP when it runs {@code --no-tls}), a HOST:PORT is https:// exactly when a
 * CA file is known, and a URL keeps its scheme.
 */
class HooksEndpointTest {
    private static UnaryOperator<String> env(Map<String, String> vars) {
        return vars::get;
    }

    @Test
    void aHostAndPortIsHttpsWhenACaFileIsGivenAndAUrlKeepsItsScheme(@TempDir Path dir) {
        UnaryOperator<String> none = env(Map.of());
        Path ca = dir.resolve("ca.pem");
        assertThat(HooksEndpoint.resolve("h:7390", null, dir, none).url()).isEqualTo("http://h:7390");
        HooksEndpoint https = HooksEndpoint.resolve("h:7390", ca, dir, none);
        assertThat(https.url()).isEqualTo("https://h:7390");
        assertThat(https.caFile()).contains(ca);
        assertThat(HooksEndpoint.resolve("http://h:7390/v1/", ca, dir, none).url()).as("the scheme given wins").isEqualTo("http://h:7390");
        assertThat(HooksEndpoint.resolve("https://h:7390/", null, dir, none).url()).isEqualTo("https://h:7390");
    }

    @Test
    void theVariablesCountWhenNoFlagIsGivenAndAFlagBeatsThem(@TempDir Path dir) {
        UnaryOperator<String> vars = env(Map.of(HooksEndpoint.ENV_HOOKS, "e:1", HooksEndpoint.ENV_CA, "/etc/strata/ca.pem"));
        HooksEndpoint fromEnv = HooksEndpoint.resolve(null, null, dir, vars);
        assertThat(fromEnv.url()).isEqualTo("https://e:1");
        assertThat(fromEnv.caFile()).contains(Path.of("/etc/strata/ca.pem"));
        assertThat(fromEnv.caFrom()).isEqualTo("$" + HooksEndpoint.ENV_CA);
        HooksEndpoint flags = HooksEndpoint.resolve("f:2", dir.resolve("mine.pem"), dir, vars);
        assertThat(flags.url()).isEqualTo("https://f:2");
        assertThat(flags.caFile()).contains(dir.resolve("mine.pem"));
        assertThat(flags.caFrom()).isEqualTo("--ca-file");
    }

    @Test
    void theLocalClusterIsReachedOverHttpsWithItsCaUnlessItRunsWithoutTls(@TempDir Path dir) throws Exception {
        ClusterDir cluster = new ClusterDir(dir);
        UpLayout layout = UpLayout.loadOrCreate(cluster, null, null, null, null, dir.resolve("mnt"));
        UnaryOperator<String> none = env(Map.of());
        // no client.toml yet (never started): plain HTTP on the layout's port
        assertThat(HooksEndpoint.local(dir).url()).isEqualTo("http://127.0.0.1:" + layout.hooksHttp());

        UpTls.init(cluster);
        Path clientToml = dir.resolve(ClientSource.CLIENT_TOML);
        AtomicFiles.plain().write(clientToml, layout.clientToml() + UpTls.clientToml(cluster), false);
        HooksEndpoint tls = HooksEndpoint.resolve(null, null, dir, none);
        assertThat(tls.url()).isEqualTo("https://127.0.0.1:" + layout.hooksHttp());
        assertThat(tls.caFile()).contains(dir.resolve(UpTls.DIR).resolve(UpTls.CA_CERT));
        assertThat(tls.caFrom()).contains(clientToml.toString());
        assertThat(tls.client(Duration.ofSeconds(1))).isNotNull();

        // strata up --no-tls writes client.toml without [tls]
        AtomicFiles.plain().write(clientToml, layout.clientToml(), false);
        HooksEndpoint plain = HooksEndpoint.local(dir);
        assertThat(plain.url()).isEqualTo("http://127.0.0.1:" + layout.hooksHttp());
        assertThat(plain.caFile()).isEmpty();
    }

    @Test
    void noServerNamedAndNoLocalClusterIsAnErrorSayingWhatToGive(@TempDir Path dir) {
        assertThatThrownBy(() -> HooksEndpoint.resolve(null, null, dir.resolve("none"), env(Map.of())))
                .isInstanceOf(StrataException.class).hasMessageContaining("--hooks HOST:PORT").hasMessageContaining("$STRATA_HOOKS");
    }

    @Test
    void aCaFileThatCannotBeReadNamesItAndWhereItCameFrom(@TempDir Path dir) throws Exception {
        Path bad = Files.writeString(dir.resolve("ca.pem"), "not a certificate\n");
        HooksEndpoint e = HooksEndpoint.resolve("h:1", bad, dir, env(Map.of()));
        assertThatThrownBy(() -> e.client(Duration.ofSeconds(1))).isInstanceOf(StrataException.class)
                .hasMessageContaining("--ca-file").hasMessageContaining(bad.toString());
    }
}
