package io.strata.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.strata.core.auth.ClusterKey;
import io.strata.core.auth.Role;
import io.strata.core.auth.Token;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code strata admin token create} with uid and gid ranges, and the ranges it refuses. */
class AdminTokenTest {
    @TempDir
    Path dir;

    private Path key() throws Exception {
        Path f = dir.resolve("cluster.key");
        ClusterKey.readOrCreate(f);
        return f;
    }

    @Test
    void aClientTokenCarriesTheRangesGiven() throws Exception {
        CliTest.Run r = CliTest.strata("admin", "token", "create", "--role", "client", "--ttl", "1h", "--subject", "lab",
                "--uids", "1000-1999", "--gids", "100,1000-1999", "--key", key().toString());
        assertThat(r.code()).as(r.err()).isZero();
        Token t = Token.peek(r.out().strip());
        assertThat(t.role()).isEqualTo(Role.CLIENT);
        assertThat(t.uids()).hasToString("1000-1999");
        assertThat(t.gids()).hasToString("100,1000-1999");
        Token plain = Token.peek(CliTest.strata("admin", "token", "create", "--role", "client", "--ttl", "1h",
                "--key", key().toString()).out().strip());
        assertThat(plain.uids()).isNull();
    }

    @Test
    void badRangesAreRefusedWithAClearMessage() throws Exception {
        String k = key().toString();
        CliTest.Run inverted = CliTest.strata("admin", "token", "create", "--role", "client", "--ttl", "1h", "--uids", "1999-1000", "--key", k);
        assertThat(inverted.code()).isNotZero();
        assertThat(inverted.err()).contains("--uids", "1999-1000", "low end first");
        CliTest.Run words = CliTest.strata("admin", "token", "create", "--role", "client", "--ttl", "1h", "--gids", "staff", "--key", k);
        assertThat(words.err()).contains("--gids", "'staff' is not an id", "1000-1999");
        CliTest.Run overlap = CliTest.strata("admin", "token", "create", "--role", "client", "--ttl", "1h", "--uids", "1-10,5", "--key", k);
        assertThat(overlap.err()).contains("overlap");
        CliTest.Run daemon = CliTest.strata("admin", "token", "create", "--role", "storage", "--ttl", "1h", "--subject", "node-1",
                "--uids", "1000", "--key", k);
        assertThat(daemon.code()).isNotZero();
        assertThat(daemon.err()).contains("client tokens only");
    }
}
