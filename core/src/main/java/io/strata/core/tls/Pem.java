package io.strata.core.tls;

import java.io.IOException;
import java.io.StringReader;
import java.io.StringWriter;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.PrivateKey;
import java.security.cert.CertificateException;
import java.security.cert.X509Certificate;
import java.util.ArrayList;
import java.util.List;
import org.bouncycastle.asn1.pkcs.PrivateKeyInfo;
import org.bouncycastle.cert.X509CertificateHolder;
import org.bouncycastle.cert.jcajce.JcaX509CertificateConverter;
import org.bouncycastle.openssl.PEMKeyPair;
import org.bouncycastle.openssl.PEMParser;
import org.bouncycastle.openssl.jcajce.JcaPEMKeyConverter;
import org.bouncycastle.openssl.jcajce.JcaPEMWriter;
import org.bouncycastle.openssl.jcajce.JcaPKCS8Generator;

/**
 * PEM text of certificates and private keys. Keys are written as unencrypted PKCS#8
 * ({@code PRIVATE KEY}), the form both TLS engines (BoringSSL and the JDK's) read; the files
 * that hold them are the caller's to keep private. Reading also takes SEC1 ({@code EC PRIVATE
 * KEY}) and PKCS#1 keys, as a bring-your-own CA may come from openssl.
 */
public final class Pem {
    private Pem() {
    }

    public static String encode(X509Certificate cert) {
        return write(cert);
    }

    public static String encode(PrivateKey key) {
        try {
            return write(new JcaPKCS8Generator(key, null).generate());
        } catch (org.bouncycastle.util.io.pem.PemGenerationException e) {
            throw new IllegalArgumentException("cannot encode the private key: " + e.getMessage(), e);
        }
    }

    private static String write(Object o) {
        StringWriter s = new StringWriter();
        try (JcaPEMWriter w = new JcaPEMWriter(s)) {
            w.writeObject(o);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return s.toString();
    }

    /** The certificates of {@code file}, in order (a chain starts with the leaf); at least one. */
    public static List<X509Certificate> readCertificates(Path file) throws IOException {
        List<X509Certificate> out = new ArrayList<>();
        JcaX509CertificateConverter conv = new JcaX509CertificateConverter();
        try (PEMParser p = new PEMParser(new StringReader(Files.readString(file)))) {
            for (Object o = p.readObject(); o != null; o = p.readObject()) {
                if (o instanceof X509CertificateHolder h) {
                    out.add(conv.getCertificate(h));
                }
            }
        } catch (CertificateException | RuntimeException e) {
            throw new IOException(file + ": not a PEM certificate: " + e.getMessage(), e);
        }
        if (out.isEmpty()) {
            throw new IOException(file + ": no PEM certificate in it");
        }
        return out;
    }

    /** The one private key of {@code file}. */
    public static PrivateKey readPrivateKey(Path file) throws IOException {
        JcaPEMKeyConverter conv = new JcaPEMKeyConverter();
        try (PEMParser p = new PEMParser(new StringReader(Files.readString(file)))) {
            for (Object o = p.readObject(); o != null; o = p.readObject()) {
                switch (o) {
                    case PrivateKeyInfo k -> {
                        return conv.getPrivateKey(k);
                    }
                    case PEMKeyPair kp -> {
                        return conv.getKeyPair(kp).getPrivate();
                    }
                    default -> {
                        // a certificate or parameters next to the key: skip
                    }
                }
            }
        } catch (IOException | RuntimeException e) {
            throw new IOException(file + ": not an unencrypted PEM private key: " + e.getMessage(), e);
        }
        throw new IOException(file + ": no unencrypted PEM private key in it");
    }
}
