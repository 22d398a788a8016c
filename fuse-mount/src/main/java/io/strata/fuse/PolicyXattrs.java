package io.strata.fuse;

import io.strata.client.FileStatus;
import io.strata.client.StrataFileSystem;
import io.strata.config.policy.PolicyField;
import io.strata.core.Status;
import io.strata.core.StrataException;
import io.strata.protocol.meta.Layout;
import io.strata.protocol.meta.PolicyInfo;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.stream.Collectors;

/**
 * Directory policies as extended attributes (Linux lets FUSE see only {@code user.*} names from
 * unprivileged tools, hence the prefix):
 * <ul>
 *   <li>{@code user.strata.policy} on a directory: the effective policy, one {@code key=value}
 *       per line; setting it applies assignments ({@code "consistency=strict stripe.width=8"},
 *       separated by spaces, commas or newlines; {@code key=inherit} drops one); removing it
 *       drops every override the directory sets.</li>
 *   <li>{@code user.strata.policy.<field>} on a directory: one field's effective value; set it
 *       to change that field, remove it to inherit the field again.</li>
 *   <li>On a file, {@code user.strata.policy} is the policy fixed at its creation (read-only) and
 *       {@code user.strata.layout} its layout (chunk size, stripe width, chain table, chains).</li>
 * </ul>
 * These attributes are virtual: read and set by name, never listed (a listing shows only the
 * stored attributes), so {@code cp -a}, {@code rsync -X} and {@code tar --xattrs} do not copy a
 * directory's effective policy onto another directory as overrides, nor try to set a file's
 * read-only ones. Other names are ordinary extended attributes kept by the namespace.
 */
final class PolicyXattrs {
    static final String POLICY = "user.strata.policy";
    static final String FIELD_PREFIX = POLICY + ".";
    static final String LAYOUT = "user.strata.layout";

    private PolicyXattrs() {
    }

    static boolean handles(String name) {
        return name.equals(POLICY) || name.equals(LAYOUT) || name.startsWith(FIELD_PREFIX);
    }

    /** The attribute's value; NO_SUCH_ATTRIBUTE where it does not apply. */
    static CompletableFuture<byte[]> get(StrataFileSystem fs, String path, String name) {
        return fs.lstatAsync(path).thenCompose(st -> {
            if (st.isDirectory()) {
                if (name.equals(LAYOUT)) {
                    return missing(name);
                }
                return fs.policyAsync(path).thenApply(p -> bytes(name.equals(POLICY) ? text(p) : field(p, name)));
            }
            if (st.isFile()) {
                if (name.equals(LAYOUT)) {
                    return CompletableFuture.completedFuture(bytes(layout(st.layout())));
                }
                if (name.equals(POLICY)) {
                    return CompletableFuture.completedFuture(bytes(fileText(st)));
                }
                String key = name.substring(FIELD_PREFIX.length());
                String v = st.policy().get(PolicyField.byKey(key).key());
                return v == null ? missing(name) : CompletableFuture.completedFuture(bytes(v));
            }
            return missing(name);
        });
    }

    static CompletableFuture<Void> set(StrataFileSystem fs, String path, String name, byte[] value) {
        String v = new String(value, StandardCharsets.UTF_8).trim();
        return fs.lstatAsync(path).thenCompose(st -> {
            if (!st.isDirectory()) {
                throw new StrataException(Status.NOT_PERMITTED, "a file's policy is fixed when it is created; set " + name
                        + " on its directory");
            }
            if (name.equals(LAYOUT)) {
                throw new StrataException(Status.NOT_PERMITTED, name + " is read-only");
            }
            List<String> assignments = new ArrayList<>();
            if (name.equals(POLICY)) {
                for (String a : v.split("[\\s,]+")) {
                    if (!a.isEmpty()) {
                        assignments.add(a);
                    }
                }
            } else {
                assignments.add(PolicyField.byKey(name.substring(FIELD_PREFIX.length())).key() + "=" + v);
            }
            return fs.setPolicyAsync(path, assignments).thenAccept(p -> { });
        });
    }

    static CompletableFuture<Void> remove(StrataFileSystem fs, String path, String name) {
        return fs.lstatAsync(path).thenCompose(st -> {
            if (!st.isDirectory()) {
                throw new StrataException(Status.NOT_PERMITTED, "a file's policy is fixed when it is created");
            }
            if (name.equals(POLICY)) {
                return fs.policyAsync(path).thenCompose(p -> p.overrides().isEmpty() ? CompletableFuture.completedFuture(null)
                        : fs.setPolicyAsync(path, p.overrides().keySet().stream().map(k -> k + "=inherit").toList()).thenAccept(x -> { }));
            }
            if (name.equals(LAYOUT)) {
                return missing(name).thenAccept(x -> { });
            }
            String key = PolicyField.byKey(name.substring(FIELD_PREFIX.length())).key();
            return fs.setPolicyAsync(path, List.of(key + "=inherit")).thenAccept(p -> { });
        });
    }

    private static <T> CompletableFuture<T> missing(String name) {
        return CompletableFuture.failedFuture(new StrataException(Status.NO_SUCH_ATTRIBUTE, "no attribute " + name + " here"));
    }

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    static String text(PolicyInfo p) {
        return p.effective().stream().map(s -> s.key() + "=" + s.value()).collect(Collectors.joining("\n")) + "\n";
    }

    private static String field(PolicyInfo p, String name) {
        String key = PolicyField.byKey(name.substring(FIELD_PREFIX.length())).key();
        for (PolicyInfo.Field s : p.effective()) {
            if (s.key().equals(key)) {
                return s.value();
            }
        }
        throw new StrataException(Status.NO_SUCH_ATTRIBUTE, "no policy field " + key);
    }

    private static String fileText(FileStatus st) {
        StringBuilder sb = new StringBuilder();
        for (PolicyField f : PolicyField.values()) {
            String v = st.policy().get(f.key());
            if (v != null) {
                sb.append(f.key()).append('=').append(v).append('\n');
            }
        }
        return sb.toString();
    }

    private static String layout(Layout l) {
        return "chunk-size=" + io.strata.core.DataSize.ofBytes(l.chunkSize()) + "\nstripe-width=" + l.stripeWidth()
                + "\nchain-table=" + l.tableId() + " v" + l.tableVersion() + "\nreplicas=" + l.replicas()
                + "\nchains=" + l.chains().stream().map(c -> String.valueOf(c.value())).collect(Collectors.joining(",")) + "\n";
    }
}
