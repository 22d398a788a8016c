package io.strata.mgmtd;

import io.strata.config.ConfigException;
import io.strata.config.TlsConfig;
import io.strata.core.tls.TlsEngine;
import java.security.cert.X509Certificate;
import java.util.List;
import org.apache.ratis.conf.Parameters;
import org.apache.ratis.grpc.GrpcConfigKeys;
import org.apache.ratis.grpc.GrpcTlsConfig;
import org.apache.ratis.security.TlsConf;
import org.apache.ratis.thirdparty.io.netty.handler.ssl.OpenSsl;
import org.apache.ratis.thirdparty.io.netty.handler.ssl.SslProvider;

/**
 * Mutual TLS on the cluster managers' Ratis (gRPC) ports, with the same {@code [tls]} files as
 * the peer's Strata RPC: its certificate and key, and the cluster CA.
 *
 * <p>Why: the Raft traffic carries every change to the cluster's membership, chains and hints,
 * and a Ratis server believes whatever a peer sends it (votes, appends, snapshots). With TLS on,
 * each Ratis server requires a certificate signed by the cluster CA from every connection it
 * accepts, and dials its peers presenting its own and checking theirs (signed by the CA, naming
 * the host dialled): a peer without a certificate from the cluster CA, or without TLS, fails
 * the handshake and never reaches the log.
 *
 * <p>One configuration serves every gRPC channel Ratis has (server to server, client and admin
 * requests, which all share the Raft port here). The files are read in memory with Strata's own
 * PEM reader, so the key may be PKCS#8 or SEC1 as in {@link TlsConfig}; nothing is written to
 * disk. TLS 1.3 only, as every other Strata connection. Ratis runs its own shaded Netty: the
 * {@code engine} setting maps to its BoringSSL or JDK provider, and BoringSSL is refused at
 * start where the shaded one does not load.
 */
final class RaftTls {
    private static final String PROTOCOL = "TLSv1.3";

    private RaftTls() {
    }

    /** The Ratis parameters of {@code tls}: mutual TLS on every channel, or none when TLS is off. */
    static Parameters parameters(TlsConfig tls) {
        Parameters p = new Parameters();
        if (tls.enabled()) {
            GrpcConfigKeys.TLS.setConf(p, conf(tls));
        }
        return p;
    }

    static GrpcTlsConfig conf(TlsConfig tls) {
        TlsConfig.Material m = tls.material();
        List<X509Certificate> chain = m.chain();
        List<X509Certificate> ca = m.ca();
        if (chain.isEmpty()) {
            throw new ConfigException("tls.cert-file", "holds no certificate: " + tls.certFile());
        }
        if (ca.isEmpty()) {
            throw new ConfigException("tls.ca-file", "holds no certificate: " + tls.caFile());
        }
        return GrpcTlsConfig.newBuilder()
                .setName("strata-mgmtd-raft")
                .setKeyCertificates(new TlsConf.CertificatesConf(chain))
                .setPrivateKey(new TlsConf.PrivateKeyConf(m.key()))
                .setTrustCertificates(new TlsConf.CertificatesConf(ca))
                .setMutualTls(true)
                .setSslProvider(provider(tls.engine()))
                .setProtocols(PROTOCOL)
                .build();
    }

    private static SslProvider provider(TlsEngine engine) {
        if (engine == TlsEngine.JDK) {
            return SslProvider.JDK;
        }
        if (!OpenSsl.isAvailable()) {
            Throwable why = OpenSsl.unavailabilityCause();
            throw new ConfigException("tls.engine", "openssl is not available to Ratis here: "
                    + (why == null ? "unknown reason" : why.getMessage()));
        }
        return SslProvider.OPENSSL;
    }
}
