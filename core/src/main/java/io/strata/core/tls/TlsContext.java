package io.strata.core.tls;

import io.netty.buffer.ByteBufAllocator;
import io.netty.handler.ssl.ClientAuth;
import io.netty.handler.ssl.SslContext;
import io.netty.handler.ssl.SslContextBuilder;
import io.netty.handler.ssl.SslHandler;
import java.io.IOException;
import java.nio.file.Path;
import java.security.PrivateKey;
import java.security.cert.X509Certificate;
import java.util.List;
import javax.net.ssl.SSLException;

/**
 * A process's side of mutual TLS: its certificate and key, and the cluster CA it trusts. Its
 * servers present the certificate and require one from every client, signed by the CA (a peer
 * without one, with another CA's, or with an expired one fails the handshake and is
 * disconnected before any Strata frame is read); its clients present the same certificate,
 * check that the server's is signed by the CA and names the host they dialled.
 *
 * <p>TLS 1.3 only. The token a connection authenticates with still carries the caller's role:
 * the certificate proves the peer belongs to the cluster, the token what it may do.
 */
public final class TlsContext {
    private static final String[] PROTOCOLS = {"TLSv1.3"};

    private final SslContext server;
    private final SslContext client;
    private final TlsEngine engine;
    private final String subject;

    private TlsContext(SslContext server, SslContext client, TlsEngine engine, String subject) {
        this.server = server;
        this.client = client;
        this.engine = engine;
        this.subject = subject;
    }

    /** The context of PEM files: {@code certFile} (this process's certificate, then any intermediates), {@code keyFile}, {@code caFile}. */
    public static TlsContext load(Path certFile, Path keyFile, Path caFile, TlsEngine engine) throws IOException {
        return of(Pem.readCertificates(certFile), Pem.readPrivateKey(keyFile), Pem.readCertificates(caFile), engine);
    }

    /** The context of a certificate {@code chain} (leaf first), its {@code key}, and the CAs to trust. */
    public static TlsContext of(List<X509Certificate> chain, PrivateKey key, List<X509Certificate> trusted, TlsEngine engine)
            throws SSLException {
        X509Certificate[] c = chain.toArray(X509Certificate[]::new);
        X509Certificate[] ca = trusted.toArray(X509Certificate[]::new);
        SslContext server = SslContextBuilder.forServer(key, c).trustManager(ca).clientAuth(ClientAuth.REQUIRE)
                .sslProvider(engine.provider()).protocols(PROTOCOLS).build();
        SslContext client = SslContextBuilder.forClient().keyManager(key, c).trustManager(ca)
                .endpointIdentificationAlgorithm("HTTPS").sslProvider(engine.provider()).protocols(PROTOCOLS).build();
        return new TlsContext(server, client, engine, c[0].getSubjectX500Principal().getName());
    }

    /** A handler for a connection a server accepted (first in its pipeline). */
    public SslHandler serverHandler(ByteBufAllocator alloc) {
        return server.newHandler(alloc);
    }

    /** A handler for a connection to {@code host}, whose certificate must name it. */
    public SslHandler clientHandler(ByteBufAllocator alloc, String host, int port) {
        return client.newHandler(alloc, host, port);
    }

    public TlsEngine engine() {
        return engine;
    }

    @Override
    public String toString() {
        return "TLS[" + engine + ", " + subject + "]";
    }
}
