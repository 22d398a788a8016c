package io.strata.hooks;

import io.strata.core.tls.Pem;
import java.io.IOException;
import java.net.http.HttpClient;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.security.cert.X509Certificate;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLParameters;
import javax.net.ssl.TrustManagerFactory;

/**
 * HTTP clients for Java callers of the hooks API ({@code strata prefetch}, the benches, tests).
 *
 * <p>Why a CA of its own: the hooks server's certificate is issued by the cluster CA, which no
 * system trust store holds. A client given the CA's PEM file trusts that CA and nothing else, so
 * it believes a server only with a certificate the cluster CA issued for the host it dialled
 * ({@code java.net.http} checks the name), and speaks TLS 1.3 as the server does. Without a CA
 * file it is the JDK's default client (plain HTTP, or HTTPS against the system trust store).
 */
public final class HooksHttp {
    private HooksHttp() {
    }

    /** A client that trusts the CA certificates of {@code caFile} only, when given. */
    public static HttpClient client(Optional<Path> caFile, Duration connectTimeout) throws IOException {
        HttpClient.Builder b = HttpClient.newBuilder().connectTimeout(connectTimeout);
        if (caFile.isPresent()) {
            SSLContext ssl = trusting(caFile.get());
            SSLParameters p = ssl.getDefaultSSLParameters();
            p.setProtocols(new String[] {"TLSv1.3"});
            b.sslContext(ssl).sslParameters(p);
        }
        return b.build();
    }

    /** A TLS context that trusts the CA certificates of PEM file {@code caFile} and no other. */
    public static SSLContext trusting(Path caFile) throws IOException {
        List<X509Certificate> cas = Pem.readCertificates(caFile);
        try {
            KeyStore ks = KeyStore.getInstance(KeyStore.getDefaultType());
            ks.load(null, null);
            for (int i = 0; i < cas.size(); i++) {
                ks.setCertificateEntry("ca-" + i, cas.get(i));
            }
            TrustManagerFactory tmf = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
            tmf.init(ks);
            SSLContext ssl = SSLContext.getInstance("TLSv1.3");
            ssl.init(null, tmf.getTrustManagers(), null);
            return ssl;
        } catch (GeneralSecurityException e) {
            throw new IOException(caFile + ": cannot trust its certificates: " + e.getMessage(), e);
        }
    }
}
