package io.strata.cli;

import io.strata.core.NodeId;
import io.strata.core.auth.ClusterKey;
import io.strata.core.auth.Credentials;
import io.strata.core.auth.IdRanges;
import io.strata.core.auth.Role;
import io.strata.core.auth.Token;
import io.strata.store.AtomicFiles;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;

/**
 * Authentication of a {@code strata up} cluster, on by default: the cluster key
 * ({@code DATA/cluster.key}, made at the first start and kept), and at every start fresh tokens
 * (a year long): one per daemon in its directory ({@code DATA/NAME/NAME.token}, role by kind,
 * subject its node id for the daemons that register with the manager, else its name), the
 * {@code client} token of the native commands and the mount ({@code DATA/client.token}) and the
 * {@code admin} token of {@code strata admin} ({@code DATA/admin.token}). All files 0600.
 *
 * <p>The client tokens (the native commands' and the mount's) may act for every uid and gid,
 * root's included: whoever can read them can read the cluster key beside them and mint any
 * token anyway, and the local mount is used by root as much as by its owner. Issue narrower
 * ones ({@code strata admin token create --uids}) for mounts other users reach.
 */
final class UpAuth {
    static final String KEY_FILE = "cluster.key";
    static final String CLIENT_TOKEN = "client.token";
    static final String ADMIN_TOKEN = "admin.token";
    static final Duration TTL = Duration.ofDays(365);

    private UpAuth() {
    }

    /** Makes the key if there is none yet, and issues the client and admin tokens. */
    static void init(ClusterDir dir) throws IOException {
        ClusterKey key = ClusterKey.readOrCreate(dir.root.resolve(KEY_FILE));
        issue(key, Role.CLIENT, "client", dir.root.resolve(CLIENT_TOKEN));
        issue(key, Role.ADMIN, "admin", dir.root.resolve(ADMIN_TOKEN));
    }

    /** The admin token {@link #init} wrote, for {@code strata up}'s own calls to the manager. */
    static Credentials admin(Path root) throws IOException {
        return Credentials.read(root.resolve(ADMIN_TOKEN));
    }

    /** The {@code [auth]} table of the client config: the client token. */
    static String clientToml(ClusterDir dir) {
        return "\n[auth]\ntoken-file = \"" + esc(dir.root.resolve(CLIENT_TOKEN)) + "\"\n";
    }

    /**
     * Issues the token of daemon {@code d} into its directory and returns the {@code [auth]} table
     * of its config: its token, and the key for those that serve (all but the mount).
     */
    static String daemonToml(ClusterDir dir, UpCommand.DaemonSpec d) throws IOException {
        ClusterKey key = ClusterKey.read(dir.root.resolve(KEY_FILE));
        Role role = switch (d.command()) {
            case "mgmtd" -> Role.MGMTD;
            case "meta" -> Role.META;
            case "storage" -> Role.STORAGE;
            case "l2" -> Role.L2;
            case "hooks" -> Role.SCHEDULER;
            case "mount" -> Role.CLIENT;
            default -> throw new IllegalArgumentException("no role for a " + d.command() + " daemon");
        };
        Path token = dir.daemonDir(d.name()).resolve(d.name() + ".token");
        issue(key, role, subject(d), token);
        String keyLine = role == Role.CLIENT ? "" : "key-file = \"" + esc(dir.root.resolve(KEY_FILE)) + "\"\n";
        return "\n[auth]\n" + keyLine + "token-file = \"" + esc(token) + "\"\n";
    }

    /** The node id a daemon registers under with the manager (see {@link UpLayout}), else its name. */
    private static String subject(UpCommand.DaemonSpec d) {
        return switch (d.command()) {
            case "storage" -> NodeId.of(index(d.name())).toString();
            case "l2" -> NodeId.of(UpLayout.L2_NODE_ID + index(d.name())).toString();
            case "meta" -> NodeId.of(UpLayout.META_NODE_ID).toString();
            default -> d.name();
        };
    }

    /** The {@code i} of {@code storage-i} or {@code l2-i}. */
    private static int index(String name) {
        return Integer.parseInt(name.substring(name.lastIndexOf('-') + 1));
    }

    private static void issue(ClusterKey key, Role role, String subject, Path file) throws IOException {
        IdRanges ids = role == Role.CLIENT ? IdRanges.ALL : null;
        AtomicFiles.plain().write(file, Token.issue(key, role, subject, Instant.now(), TTL, ids, ids) + "\n", false);
    }

    private static String esc(Path p) {
        return p.toString().replace("\\", "\\\\").replace("\"", "\\\"");
    }
}
