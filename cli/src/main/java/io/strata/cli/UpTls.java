package io.strata.cli;

import io.strata.core.tls.CertificateAuthority;
import io.strata.core.tls.Pem;
import io.strata.core.tls.TlsContext;
import io.strata.core.tls.TlsEngine;
import io.strata.store.AtomicFiles;
import io.strata.store.PrivateFiles;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.cert.X509Certificate;
import java.time.Duration;
import java.time.Instant;

/**
 * TLS of a {@code strata up} cluster, on by default ({@code --no-tls} turns it off): the
 * cluster CA ({@code DATA/tls/ca.pem} and {@code ca.key}, made at the first start and kept; a
 * pair put there beforehand is used instead: bring-your-own CA), a certificate and key per daemon
 * ({@code DATA/tls/NAME.pem}, {@code NAME.key}) and one for the native commands
 * ({@code client.pem}, {@code client.key}), each naming localhost, 127.0.0.1 and this host. A
 * certificate is kept across starts while the CA signed it and it has more than
 * {@link #RENEW_BEFORE} left; otherwise it is issued again. All files 0600, the directory 0700.
 */
final class UpTls {
    static final String DIR = "tls";
    static final String CA_CERT = "ca.pem";
    static final String CA_KEY = "ca.key";
    static final String CLIENT = "client";
    static final Duration CA_VALIDITY = Duration.ofDays(3650);
    static final Duration VALIDITY = Duration.ofDays(365);
    static final Duration RENEW_BEFORE = Duration.ofDays(30);

    private UpTls() {
    }

    /** The CA (made when there is none) and the client certificate. */
    static void init(ClusterDir dir) throws IOException {
        Path tls = PrivateFiles.createDirectories(dir.root.resolve(DIR));
        Path cert = tls.resolve(CA_CERT);
        Path key = tls.resolve(CA_KEY);
        if (Files.exists(cert) != Files.exists(key)) {
            throw new IllegalStateException("TLS: " + (Files.exists(cert) ? key : cert) + " is missing: bring both " + CA_CERT
                    + " and " + CA_KEY + " (your own CA), or neither (strata up makes one); or start with --no-tls");
        }
        if (!Files.exists(cert)) {
            CertificateAuthority ca = CertificateAuthority.generate("strata cluster CA " + dir.root.getFileName(), Instant.now(), CA_VALIDITY);
            AtomicFiles.plain().write(key, ca.keyPem(), false);
            AtomicFiles.plain().write(cert, ca.certificatePem(), false);
        }
        issue(dir, CLIENT);
    }

    /** The TLS context of the native commands' certificate, for {@code strata up}'s own calls. */
    static TlsContext client(ClusterDir dir) throws IOException {
        Path tls = dir.root.resolve(DIR);
        return TlsContext.load(tls.resolve(CLIENT + ".pem"), tls.resolve(CLIENT + ".key"), tls.resolve(CA_CERT), TlsEngine.resolve("auto"));
    }

    /** The {@code [tls]} table of the client config: the client certificate. */
    static String clientToml(ClusterDir dir) {
        return table(dir, CLIENT);
    }

    /** Issues daemon {@code name}'s certificate (unless a good one is there) and returns the {@code [tls]} table of its config. */
    static String daemonToml(ClusterDir dir, String name) throws IOException {
        issue(dir, name);
        return table(dir, name);
    }

    private static String table(ClusterDir dir, String name) {
        Path tls = dir.root.resolve(DIR);
        return "\n[tls]\ncert-file = \"" + esc(tls.resolve(name + ".pem")) + "\"\nkey-file = \"" + esc(tls.resolve(name + ".key"))
                + "\"\nca-file = \"" + esc(tls.resolve(CA_CERT)) + "\"\n";
    }

    private static void issue(ClusterDir dir, String name) throws IOException {
        Path tls = dir.root.resolve(DIR);
        CertificateAuthority ca = CertificateAuthority.read(tls.resolve(CA_CERT), tls.resolve(CA_KEY));
        Path cert = tls.resolve(name + ".pem");
        Path key = tls.resolve(name + ".key");
        Instant now = Instant.now();
        if (Files.exists(cert) && Files.exists(key) && good(ca, cert, now)) {
            return;
        }
        CertificateAuthority.Issued issued = ca.issue(name, CertificateAuthority.localHosts(), now, VALIDITY);
        AtomicFiles.plain().write(key, issued.keyPem(), false);
        AtomicFiles.plain().write(cert, issued.certificatePem(), false);
    }

    /** Signed by {@code ca}, and valid for more than {@link #RENEW_BEFORE} yet. */
    private static boolean good(CertificateAuthority ca, Path cert, Instant now) {
        try {
            X509Certificate c = Pem.readCertificates(cert).get(0);
            return ca.signed(c) && c.getNotAfter().toInstant().isAfter(now.plus(RENEW_BEFORE)) && !c.getNotBefore().toInstant().isAfter(now);
        } catch (IOException e) {
            return false;
        }
    }

    private static String esc(Path p) {
        return p.toString().replace("\\", "\\\\").replace("\"", "\\\"");
    }
}
