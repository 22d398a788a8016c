package io.strata.config;

import io.strata.core.NodeContext;
import io.strata.core.tls.Pem;
import io.strata.core.tls.TlsContext;
import io.strata.core.tls.TlsEngine;
import java.io.IOException;
import java.nio.file.Path;
import java.security.PrivateKey;
import java.security.cert.X509Certificate;
import java.util.List;
import java.util.Optional;

/**
 * The {@code [tls]} table, read by every daemon and client:
 * <pre>
 * [tls]
 * enabled = true                           # default true when the table is there
 * cert-file = "/etc/strata/tls/storage-1.pem" # this process's certificate (then any intermediates)
 * key-file = "/etc/strata/tls/storage-1.key"  # its private key, PKCS#8 or SEC1 PEM, unencrypted (0600)
 * ca-file = "/etc/strata/tls/ca.pem"          # the cluster CA: peers must present a certificate it signed
 * engine = "auto"                          # auto | openssl | jdk
 * </pre>
 * Without the table (or with {@code enabled = false}) RPC is plaintext. With it, every server
 * of the process requires mutual TLS and every client dials with it; the three files are then
 * required. {@code engine = "openssl"} (BoringSSL) is refused where it does not load; {@code auto}
 * takes it when it does, else the JDK's.
 */
public record TlsConfig(boolean enabled, Path certFile, Path keyFile, Path caFile, TlsEngine engine) {
    public static final TlsConfig OFF = new TlsConfig(false, null, null, null, TlsEngine.JDK);

    public TlsConfig {
        if (enabled) {
            required("tls.cert-file", certFile);
            required("tls.key-file", keyFile);
            required("tls.ca-file", caFile);
        }
        if (engine == null) {
            throw new ConfigException("tls.engine", "is required");
        }
    }

    private static void required(String key, Path p) {
        if (p == null) {
            throw new ConfigException(key, "is required when TLS is enabled");
        }
    }

    public static TlsConfig read(ConfigNode root) {
        if (!root.has("tls")) {
            return OFF;
        }
        ConfigNode t = root.section("tls");
        boolean enabled = t.bool("enabled", true);
        Path cert = path(t, "cert-file");
        Path key = path(t, "key-file");
        Path ca = path(t, "ca-file");
        String e = t.string("engine", "auto");
        TlsEngine engine;
        try {
            engine = TlsEngine.resolve(e);
        } catch (IllegalArgumentException x) {
            throw new ConfigException(t.path() + ".engine", x.getMessage());
        }
        return enabled ? new TlsConfig(true, cert, key, ca, engine) : new TlsConfig(false, null, null, null, engine);
    }

    private static Path path(ConfigNode t, String k) {
        String s = t.string(k, null);
        if (s != null && s.isBlank()) {
            throw new ConfigException(t.path() + "." + k, "must name a file, got \"\"");
        }
        return s == null ? null : Path.of(s);
    }

    /** The TLS context of the three files, read now; a file that cannot be read names its key. */
    public Optional<TlsContext> context() {
        if (!enabled) {
            return Optional.empty();
        }
        Material m = material();
        try {
            return Optional.of(TlsContext.of(m.chain(), m.key(), m.ca(), engine));
        } catch (IOException | RuntimeException e) {
            throw new ConfigException("tls", "cannot use " + certFile + " with " + keyFile + ": " + e.getMessage());
        }
    }

    /** What the three files hold: the certificate chain, its private key, the CA certificates. */
    public record Material(List<X509Certificate> chain, PrivateKey key, List<X509Certificate> ca) {
    }

    /**
     * The three files' contents, read now (for a TLS stack other than {@link TlsContext}'s, such
     * as Ratis's); a file that cannot be read names its key.
     */
    public Material material() {
        return new Material(read("tls.cert-file", () -> Pem.readCertificates(certFile)),
                read("tls.key-file", () -> Pem.readPrivateKey(keyFile)),
                read("tls.ca-file", () -> Pem.readCertificates(caFile)));
    }

    private interface Reader<T> {
        T read() throws IOException;
    }

    private static <T> T read(String key, Reader<T> r) {
        try {
            return r.read();
        } catch (IOException | RuntimeException e) {
            throw new ConfigException(key, "cannot read it: " + e.getMessage());
        }
    }

    /** Gives {@code ctx} this process's TLS context (none when off). */
    public NodeContext.Builder applyTo(NodeContext.Builder ctx) {
        return ctx.tls(context().orElse(null));
    }
}
