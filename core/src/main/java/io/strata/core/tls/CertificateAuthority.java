package io.strata.core.tls;

import java.io.IOException;
import java.math.BigInteger;
import java.net.InetAddress;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.PrivateKey;
import java.security.SecureRandom;
import java.security.cert.X509Certificate;
import java.security.spec.ECGenParameterSpec;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Date;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import org.bouncycastle.asn1.x500.X500Name;
import org.bouncycastle.asn1.x500.X500NameBuilder;
import org.bouncycastle.asn1.x500.style.BCStyle;
import org.bouncycastle.asn1.x509.BasicConstraints;
import org.bouncycastle.asn1.x509.ExtendedKeyUsage;
import org.bouncycastle.asn1.x509.Extension;
import org.bouncycastle.asn1.x509.GeneralName;
import org.bouncycastle.asn1.x509.GeneralNames;
import org.bouncycastle.asn1.x509.KeyPurposeId;
import org.bouncycastle.asn1.x509.KeyUsage;
import org.bouncycastle.cert.CertIOException;
import org.bouncycastle.cert.X509v3CertificateBuilder;
import org.bouncycastle.cert.jcajce.JcaX509CertificateConverter;
import org.bouncycastle.cert.jcajce.JcaX509ExtensionUtils;
import org.bouncycastle.cert.jcajce.JcaX509v3CertificateBuilder;
import org.bouncycastle.operator.OperatorCreationException;
import org.bouncycastle.operator.jcajce.JcaContentSignerBuilder;

/**
 * A cluster's certificate authority: the CA certificate and its key, and the certificates it
 * issues to daemons and clients for mutual TLS on every Strata RPC connection.
 *
 * <p>Keys are EC P-256, signed SHA256withECDSA: a handshake costs a fraction of what RSA-2048
 * does (an ECDSA signature is far cheaper to make than an RSA one, and the keys and certificates
 * are a few hundred bytes), every TLS 1.3 engine has it (BoringSSL and the JDK's), and its
 * security (≈128 bits) is above RSA-2048's. Only the JDK's own providers (SunEC) are used: no
 * provider is registered process-wide. A CA read from files may have an RSA key instead: it
 * then signs with SHA256withRSA (the certificates it issues still get EC keys).
 *
 * <p>Issued certificates are good for both ends of a connection (extended key usage serverAuth
 * and clientAuth), since a daemon both serves and calls its peers; their subject alternative
 * names are what a client checks the server's host against.
 */
public final class CertificateAuthority {
    private static final SecureRandom RANDOM = new SecureRandom();

    private final X509Certificate certificate;
    private final PrivateKey key;

    private CertificateAuthority(X509Certificate certificate, PrivateKey key) {
        this.certificate = certificate;
        this.key = key;
    }

    /** A certificate and its private key. */
    public record Issued(X509Certificate certificate, PrivateKey key) {
        public String certificatePem() {
            return Pem.encode(certificate);
        }

        public String keyPem() {
            return Pem.encode(key);
        }
    }

    /** A new self-signed CA named {@code name}, valid from a minute before {@code now} for {@code validity}. */
    public static CertificateAuthority generate(String name, Instant now, Duration validity) {
        KeyPair kp = newKeyPair();
        X500Name subject = name(name);
        try {
            JcaX509ExtensionUtils ext = new JcaX509ExtensionUtils();
            X509v3CertificateBuilder b = new JcaX509v3CertificateBuilder(subject, serial(), Date.from(now.minusSeconds(60)),
                    Date.from(now.plus(validity)), subject, kp.getPublic())
                    .addExtension(Extension.basicConstraints, true, new BasicConstraints(0))
                    .addExtension(Extension.keyUsage, true, new KeyUsage(KeyUsage.keyCertSign | KeyUsage.cRLSign))
                    .addExtension(Extension.subjectKeyIdentifier, false, ext.createSubjectKeyIdentifier(kp.getPublic()));
            return new CertificateAuthority(sign(b, kp.getPrivate()), kp.getPrivate());
        } catch (GeneralSecurityException | CertIOException e) {
            throw new IllegalStateException("cannot make a CA certificate: " + e.getMessage(), e);
        }
    }

    /** The CA of {@code certFile} (its first certificate) and {@code keyFile}; refuses a pair that do not match. */
    public static CertificateAuthority read(Path certFile, Path keyFile) throws IOException {
        X509Certificate cert = Pem.readCertificates(certFile).get(0);
        PrivateKey key = Pem.readPrivateKey(keyFile);
        CertificateAuthority ca = new CertificateAuthority(cert, key);
        if (cert.getBasicConstraints() < 0) {
            throw new IOException(certFile + " is not a CA certificate (no basicConstraints CA:true)");
        }
        try {
            // a throwaway certificate signed with the key must verify with the certificate's public key
            ca.issue("key-check", List.of(), Instant.now(), Duration.ofMinutes(1)).certificate().verify(cert.getPublicKey());
        } catch (GeneralSecurityException | RuntimeException e) {
            throw new IOException(keyFile + " is not the key of " + certFile + ": " + e.getMessage(), e);
        }
        return ca;
    }

    public X509Certificate certificate() {
        return certificate;
    }

    public String certificatePem() {
        return Pem.encode(certificate);
    }

    public String keyPem() {
        return Pem.encode(key);
    }

    /**
     * A certificate for {@code commonName} whose subject alternative names are {@code hosts}
     * (IP literals become IP addresses, the rest DNS names), valid from a minute before
     * {@code now} for {@code validity}, or until the CA's own end if that comes first.
     */
    public Issued issue(String commonName, List<String> hosts, Instant now, Duration validity) {
        Instant notAfter = now.plus(validity);
        Instant caEnd = certificate.getNotAfter().toInstant();
        return issue(commonName, hosts, now.minusSeconds(60), notAfter.isAfter(caEnd) ? caEnd : notAfter);
    }

    /** As {@link #issue(String, List, Instant, Duration)} with explicit bounds (tests issue expired certificates). */
    public Issued issue(String commonName, List<String> hosts, Instant notBefore, Instant notAfter) {
        KeyPair kp = newKeyPair();
        try {
            JcaX509ExtensionUtils ext = new JcaX509ExtensionUtils();
            X509v3CertificateBuilder b = new JcaX509v3CertificateBuilder(certificate, serial(), Date.from(notBefore),
                    Date.from(notAfter), name(commonName), kp.getPublic())
                    .addExtension(Extension.basicConstraints, true, new BasicConstraints(false))
                    .addExtension(Extension.keyUsage, true, new KeyUsage(KeyUsage.digitalSignature))
                    .addExtension(Extension.extendedKeyUsage, false,
                            new ExtendedKeyUsage(new KeyPurposeId[] {KeyPurposeId.id_kp_serverAuth, KeyPurposeId.id_kp_clientAuth}))
                    .addExtension(Extension.subjectKeyIdentifier, false, ext.createSubjectKeyIdentifier(kp.getPublic()))
                    .addExtension(Extension.authorityKeyIdentifier, false, ext.createAuthorityKeyIdentifier(certificate));
            if (!hosts.isEmpty()) {
                b.addExtension(Extension.subjectAlternativeName, false, alternativeNames(hosts));
            }
            return new Issued(sign(b, key), kp.getPrivate());
        } catch (GeneralSecurityException | CertIOException e) {
            throw new IllegalStateException("cannot issue a certificate for " + commonName + ": " + e.getMessage(), e);
        }
    }

    /** Whether {@code cert} carries this CA's signature (a certificate of an earlier CA does not). */
    public boolean signed(X509Certificate cert) {
        try {
            cert.verify(certificate.getPublicKey());
            return true;
        } catch (GeneralSecurityException e) {
            return false;
        }
    }

    /** The names a certificate for this machine carries: localhost, 127.0.0.1, ::1, the host name, and {@code extra}. */
    public static List<String> localHosts(String... extra) {
        Set<String> hosts = new LinkedHashSet<>(List.of("localhost", "127.0.0.1", "::1"));
        try {
            hosts.add(InetAddress.getLocalHost().getHostName());
        } catch (IOException e) {
            // no resolvable host name: loopback only
        }
        hosts.addAll(List.of(extra));
        return new ArrayList<>(hosts);
    }

    private static GeneralNames alternativeNames(List<String> hosts) {
        List<GeneralName> names = new ArrayList<>();
        for (String h : hosts) {
            names.add(isIpLiteral(h) ? new GeneralName(GeneralName.iPAddress, h) : new GeneralName(GeneralName.dNSName, h));
        }
        return new GeneralNames(names.toArray(GeneralName[]::new));
    }

    private static boolean isIpLiteral(String h) {
        return h.contains(":") || h.matches("[0-9]+(\\.[0-9]+){3}");
    }

    private static X509Certificate sign(X509v3CertificateBuilder b, PrivateKey signer) throws GeneralSecurityException {
        try {
            // a CA brought by the user may hold an RSA key; the keys made here are EC
            String signature = signer.getAlgorithm().equals("RSA") ? "SHA256withRSA" : "SHA256withECDSA";
            return new JcaX509CertificateConverter().getCertificate(b.build(new JcaContentSignerBuilder(signature).build(signer)));
        } catch (OperatorCreationException e) {
            throw new GeneralSecurityException(e.getMessage(), e);
        }
    }

    private static X500Name name(String cn) {
        return new X500NameBuilder(BCStyle.INSTANCE).addRDN(BCStyle.O, "Strata").addRDN(BCStyle.CN, cn).build();
    }

    private static BigInteger serial() {
        return new BigInteger(127, RANDOM).add(BigInteger.ONE);
    }

    private static KeyPair newKeyPair() {
        try {
            KeyPairGenerator g = KeyPairGenerator.getInstance("EC");
            g.initialize(new ECGenParameterSpec("secp256r1"), RANDOM);
            return g.generateKeyPair();
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("no EC P-256 key generator in this JDK: " + e.getMessage(), e);
        }
    }
}
