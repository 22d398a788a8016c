package io.strata.hooks;

import io.netty.buffer.ByteBufAllocator;
import io.netty.handler.ssl.ClientAuth;
import io.netty.handler.ssl.SslContext;
import io.netty.handler.ssl.SslContextBuilder;
import io.netty.handler.ssl.SslHandler;
import io.netty.handler.ssl.SslProvider;
import io.strata.config.ConfigException;
import io.strata.config.TlsConfig;
import io.strata.core.tls.TlsEngine;
import java.security.cert.X509Certificate;
import java.util.Optional;
import javax.net.ssl.SSLException;

/**
 * HTTPS on the hooks' API port, with the process's own {@code [tls]} files: the certificate the
 * cluster CA issued it and its key. The API's bearer tokens then never cross the wire readable.
 *
 * <p>Why not the process's RPC {@link io.strata.core.tls.TlsContext}: that one is mutual TLS and
 * requires a client certificate, which the API's callers (a scheduler's scripts with curl, a
 * Kubernetes init container, {@code strata prefetch}) do not have: they prove who they are with
 * the token, which the server checks as before. So the server presents its certificate and asks
 * for none; a caller verifies it against the cluster CA ({@code ca-file}). TLS 1.3 only, as on
 * every other Strata port. A caller that speaks plaintext to the port fails the handshake and is
 * disconnected without an HTTP answer.
 */
public final class HooksTls {
    private static final String[] PROTOCOLS = {"TLSv1.3"};

    private final SslContext context;

    private HooksTls(SslContext context) {
        this.context = context;
    }

    /** The HTTPS of {@code tls}, read now; none when the table is absent or {@code enabled = false}. */
    public static Optional<HooksTls> of(TlsConfig tls) {
        if (!tls.enabled()) {
            return Optional.empty();
        }
        TlsConfig.Material m = tls.material(); // a file that cannot be read names its key
        try {
            SslContext c = SslContextBuilder.forServer(m.key(), m.chain().toArray(X509Certificate[]::new))
                    .clientAuth(ClientAuth.NONE).sslProvider(provider(tls.engine())).protocols(PROTOCOLS).build();
            return Optional.of(new HooksTls(c));
        } catch (SSLException | RuntimeException e) {
            throw new ConfigException("tls", "cannot serve the hooks API over HTTPS with " + tls.certFile() + " and " + tls.keyFile()
                    + ": " + e.getMessage());
        }
    }

    /** The handler that goes first in an accepted connection's pipeline. */
    SslHandler newHandler(ByteBufAllocator alloc) {
        return context.newHandler(alloc);
    }

    private static SslProvider provider(TlsEngine engine) {
        return engine == TlsEngine.OPENSSL ? SslProvider.OPENSSL : SslProvider.JDK;
    }
}
