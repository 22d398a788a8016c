package io.strata.cli;

import io.strata.config.Durations;
import io.strata.core.auth.ClusterKey;
import io.strata.core.auth.IdRanges;
import io.strata.core.auth.Role;
import io.strata.core.auth.Token;
import io.strata.core.util.Futures;
import io.strata.protocol.mgmtd.MgmtdClient;
import io.strata.protocol.mgmtd.MgmtdMessage.Revocation;
import io.strata.protocol.mgmtd.RevocationWatcher;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code strata admin token create}: signs a token with the cluster key and prints it. It needs
 * the key file, not the cluster: whoever can read the key can mint any identity.
 */
@Command(name = "token", mixinStandardHelpOptions = true,
        description = {"Issue tokens signed with the cluster key, revoke them (docs/security.md)."},
        subcommands = {AdminToken.Create.class, AdminToken.Revoke.class, AdminToken.ListRevoked.class},
        footerHeading = "%nExamples:%n",
        footer = {"  strata admin token create --role client --ttl 30d --subject alice",
                "  strata admin token revoke 3f9c0e4e5a1b2c3d4e5f60718293a4b5",
                "  strata admin token list-revoked"})
final class AdminToken {
    private AdminToken() {
    }

    @Command(name = "create", mixinStandardHelpOptions = true,
            description = {"Print a new token for a role.", "",
                    "Signed with the cluster key (--key FILE, else the local cluster's DATA/" + UpAuth.KEY_FILE + "). A daemon that "
                            + "registers with the cluster manager needs its node id as subject (node-N); roles: storage, l2, meta, "
                            + "mgmtd, client, scheduler, admin.", "",
                    "A client token acts on the meta service for the uids of --uids and the gids (primary and "
                            + "supplementary) of --gids only; without them, for every id but 0. Root (0) claimed by a "
                            + "token whose range does not name 0 is squashed to nobody (65534)."},
            footerHeading = "%nExamples:%n",
            footer = {"  strata admin token create --role scheduler --ttl 90d --subject slurm",
                    "  strata admin token create --role client --ttl 30d --subject lab \\",
                    "        --uids 1000-1999 --gids 100,1000-1999",
                    "  strata admin token create --role storage --ttl 365d --subject node-4 \\",
                    "        --key /etc/strata/cluster.key"})
    static final class Create implements Callable<Integer> {
        @Option(names = "--role", required = true, paramLabel = "ROLE", description = "storage, l2, meta, mgmtd, client, scheduler or admin.")
        String role;

        @Option(names = "--ttl", required = true, paramLabel = "DURATION", description = "How long the token is good for (e.g. 12h, 90d).")
        String ttl;

        @Option(names = "--subject", paramLabel = "NAME", description = "Who holds it: a node id (node-N) or a name (default: the role).")
        String subject;

        @Option(names = "--uids", paramLabel = "IDS",
                description = "Client tokens: the uids it may act for, e.g. 1000-1999 or 0,1000-1999 (all: every uid, root's too).")
        String uids;

        @Option(names = "--gids", paramLabel = "IDS", description = "Client tokens: the gids it may act for, e.g. 100,1000-1999.")
        String gids;

        @Option(names = "--key", paramLabel = "FILE", description = "The cluster key file (default: the local cluster's).")
        Path key;

        @Option(names = "--data", paramLabel = "DIR",
                description = "Data directory of the local `strata up` cluster whose key to use (default: $" + ClusterDir.ENV + ", else data/).")
        Path data;

        @CommandLine.Spec
        CommandLine.Model.CommandSpec spec;

        @Override
        public Integer call() throws Exception {
            Role r = Role.parse(role);
            Duration d = Durations.parse(ttl);
            if (d.isNegative() || d.isZero()) {
                throw new IllegalArgumentException("--ttl must be positive, got " + ttl);
            }
            if ((uids != null || gids != null) && r != Role.CLIENT) {
                throw new IllegalArgumentException("--uids and --gids apply to client tokens only, not " + r
                        + " (admin and daemon tokens act for any user)");
            }
            IdRanges u = ranges("--uids", uids);
            IdRanges g = ranges("--gids", gids);
            Path file = key != null ? key : ClusterDir.resolve(data).root.resolve(UpAuth.KEY_FILE);
            if (!Files.exists(file)) {
                throw new IllegalArgumentException("no cluster key at " + file + ": give --key FILE (or --data DIR of a `strata up` cluster)");
            }
            String token = Token.issue(ClusterKey.read(file), r, subject != null ? subject : r.id(), Instant.now(), d, u, g);
            spec.commandLine().getOut().println(token);
            spec.commandLine().getOut().flush();
            return 0;
        }

        private static IdRanges ranges(String option, String text) {
            if (text == null) {
                return null;
            }
            try {
                return IdRanges.parse(text);
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException(option + " " + e.getMessage());
            }
        }
    }

    @Command(name = "revoke", mixinStandardHelpOptions = true,
            description = {"Revoke a token at the cluster manager.", "",
                    "Give the token itself, or its id (the 32 hex digits `strata admin token create` tokens carry, shown in "
                            + "daemon logs). Every daemon that follows the manager refuses it within about "
                            + "5 seconds, on new connections and on those it opened before. The revocation is kept "
                            + "until the token expires (read from the token; for an id, --until, else for good). "
                            + "Takes an admin token."},
            footerHeading = "%nExamples:%n",
            footer = {"  strata admin token revoke \"$(cat lab.token)\"",
                    "  strata admin token revoke 3f9c0e4e5a1b2c3d4e5f60718293a4b5 \\",
                    "        --until 2026-01-01T00:00:00Z"})
    static final class Revoke extends AdminCommand.Call {
        @CommandLine.Parameters(paramLabel = "ID-OR-TOKEN", description = "The token (strata1....) or its id.")
        String what;

        @Option(names = "--until", paramLabel = "INSTANT",
                description = "With an id: when the token expires (e.g. 2026-01-01T00:00:00Z); the revocation is dropped then.")
        String until;

        @Override
        String run(MgmtdClient client, Duration t) {
            String id;
            long expires;
            String who = "";
            if (what.startsWith("strata1.")) {
                Token claims = Token.peek(what.strip());
                if (until != null) {
                    throw new IllegalArgumentException("--until goes with a token id: a token carries its own expiry");
                }
                id = claims.id();
                expires = claims.expiresAt().getEpochSecond();
                who = " (role " + claims.role() + ", subject " + claims.subject() + ")";
            } else {
                id = what.strip().toLowerCase(java.util.Locale.ROOT);
                if (!id.matches("[0-9a-f]{32}")) {
                    throw new IllegalArgumentException("'" + what + "' is neither a token (strata1....) nor a token id (32 hex digits)");
                }
                expires = until == null ? Revocation.FOR_GOOD : parseInstant(until).getEpochSecond();
            }
            int held = Futures.join(client.revokeAsync(id, expires), t.plusSeconds(1));
            return "revoked token " + id + who + " " + untilText(expires) + "; the manager holds " + held
                    + " revocation(s); daemons refuse it within about " + RevocationWatcher.PERIOD.toSeconds() + " s\n";
        }

        private static Instant parseInstant(String s) {
            try {
                return Instant.parse(s);
            } catch (java.time.format.DateTimeParseException e) {
                throw new IllegalArgumentException("--until " + s + ": not an instant such as 2026-01-01T00:00:00Z");
            }
        }
    }

    @Command(name = "list-revoked", mixinStandardHelpOptions = true,
            description = {"List the revoked tokens that have not expired yet."},
            footerHeading = "%nExamples:%n",
            footer = {"  strata admin token list-revoked"})
    static final class ListRevoked extends AdminCommand.Call {
        @Override
        String run(MgmtdClient client, Duration t) {
            List<Revocation> rs = Futures.join(client.revokedAsync(Duration.ofSeconds(5), t), t.plusSeconds(1));
            if (rs.isEmpty()) {
                return "No token is revoked.\n";
            }
            StringBuilder b = new StringBuilder(String.format(java.util.Locale.ROOT, "%-32s  %s%n", "TOKEN ID", "KEPT UNTIL"));
            for (Revocation r : rs) {
                b.append(String.format(java.util.Locale.ROOT, "%-32s  %s%n", r.tokenId(),
                        r.expiresAt() == Revocation.FOR_GOOD ? "for good" : Instant.ofEpochSecond(r.expiresAt())));
            }
            return b.toString();
        }
    }

    private static String untilText(long expires) {
        return expires == Revocation.FOR_GOOD ? "for good" : "until " + Instant.ofEpochSecond(expires);
    }
}
