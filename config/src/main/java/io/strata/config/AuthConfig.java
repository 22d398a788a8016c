package io.strata.config;

import io.strata.core.NodeContext;
import io.strata.core.auth.ClusterKey;
import io.strata.core.auth.Credentials;
import io.strata.core.auth.TokenVerifier;
import java.io.IOException;
import java.nio.file.Path;
import java.util.Optional;

/**
 * The {@code [auth]} table, read by every daemon and client:
 * <pre>
 * [auth]
 * key-file = "/etc/strata/cluster.key"     # daemons that verify tokens: the cluster key (0600)
 * token-file = "/etc/strata/storage-1.token" # the token this process presents on its connections
 * </pre>
 * Without the table authentication is off: servers accept every connection and clients present
 * nothing (tests, hand-written configs). With it, at least one of the two files is given.
 */
public record AuthConfig(Optional<Path> keyFile, Optional<Path> tokenFile) {
    public static final AuthConfig OFF = new AuthConfig(Optional.empty(), Optional.empty());

    public static AuthConfig read(ConfigNode root) {
        if (!root.has("auth")) {
            return OFF;
        }
        ConfigNode a = root.section("auth");
        Optional<Path> key = Optional.ofNullable(a.string("key-file", null)).map(Path::of);
        Optional<Path> token = Optional.ofNullable(a.string("token-file", null)).map(Path::of);
        if (key.isEmpty() && token.isEmpty()) {
            throw new ConfigException(a.path(), "needs key-file (to verify tokens), token-file (to present one), or both");
        }
        return new AuthConfig(key, token);
    }

    public boolean enabled() {
        return keyFile.isPresent() || tokenFile.isPresent();
    }

    /** The token of {@code token-file}, read now; a file that cannot be read names its key. */
    public Optional<Credentials> credentials() {
        return tokenFile.map(f -> {
            try {
                return Credentials.read(f);
            } catch (IOException | RuntimeException e) {
                throw new ConfigException("auth.token-file", "cannot read the token: " + e.getMessage());
            }
        });
    }

    /** A verifier with the key of {@code key-file}, read now. */
    public Optional<TokenVerifier> verifier() {
        return keyFile.map(f -> {
            try {
                return new TokenVerifier(ClusterKey.read(f));
            } catch (IOException | RuntimeException e) {
                throw new ConfigException("auth.key-file", "cannot read the cluster key: " + e.getMessage());
            }
        });
    }

    /** Gives {@code ctx} this process's credentials and verifier (none when off). */
    public NodeContext.Builder applyTo(NodeContext.Builder ctx) {
        return ctx.credentials(credentials().orElse(null)).verifier(verifier().orElse(null));
    }
}
