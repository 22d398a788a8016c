package io.strata.core.auth;

import java.io.IOException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.GeneralSecurityException;
import java.security.InvalidKeyException;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.util.Set;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * The cluster's secret: 32 random bytes that sign every token (HMAC-SHA256). Whoever holds it
 * can mint any identity, so it lives only in a {@code 0600} file read by the daemons that verify
 * tokens and by whoever issues them.
 *
 * <p>The file is written with plain JDK calls rather than local-store's private-file helpers:
 * {@code core} sits below that module, and every daemon needs to read the key.
 */
public final class ClusterKey {
    /** Bytes of key material: the HMAC-SHA256 block-size recommendation's lower bound. */
    public static final int BYTES = 32;
    private static final String ALGORITHM = "HmacSHA256";
    private static final Set<PosixFilePermission> OWNER_ONLY = PosixFilePermissions.fromString("rw-------");

    private final SecretKeySpec key;

    private ClusterKey(byte[] bytes) {
        if (bytes.length != BYTES) {
            throw new IllegalArgumentException("a cluster key is " + BYTES + " bytes, got " + bytes.length);
        }
        this.key = new SecretKeySpec(bytes, ALGORITHM);
    }

    /** A new random key. */
    public static ClusterKey generate() {
        byte[] b = new byte[BYTES];
        new SecureRandom().nextBytes(b);
        return new ClusterKey(b);
    }

    /** Reads a key file; refuses one that other users may read, since it would hand them the cluster. */
    public static ClusterKey read(Path file) throws IOException {
        Set<PosixFilePermission> mode = Files.getPosixFilePermissions(file);
        if (!OWNER_ONLY.containsAll(mode)) {
            throw new IOException(file + ": cluster key readable or writable by other users (mode "
                    + PosixFilePermissions.toString(mode) + "); fix it with: chmod 600 " + file);
        }
        byte[] b = Files.readAllBytes(file);
        if (b.length != BYTES) {
            throw new IOException(file + ": not a cluster key (" + b.length + " bytes, expected " + BYTES + ")");
        }
        return new ClusterKey(b);
    }

    /** Writes the key to a new file, mode 0600 from the start; fails if the file exists. */
    public void writeNew(Path file) throws IOException {
        try (var ch = Files.newByteChannel(file, Set.of(StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE),
                PosixFilePermissions.asFileAttribute(OWNER_ONLY))) {
            ch.write(java.nio.ByteBuffer.wrap(key.getEncoded()));
        } catch (FileAlreadyExistsException e) {
            throw new IOException(file + " exists already: a cluster key is never overwritten", e);
        }
    }

    /** The key in {@code file}, made and written first when there is none. */
    public static ClusterKey readOrCreate(Path file) throws IOException {
        if (!Files.exists(file)) {
            generate().writeNew(file);
        }
        return read(file);
    }

    byte[] sign(byte[] data) {
        try {
            Mac mac = Mac.getInstance(ALGORITHM);
            mac.init(key);
            return mac.doFinal(data);
        } catch (InvalidKeyException e) {
            throw new IllegalStateException(e);
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException(ALGORITHM + " is not available in this JDK", e);
        }
    }

    /** Whether {@code mac} is the signature of {@code data}, compared in constant time. */
    boolean verify(byte[] data, byte[] mac) {
        return MessageDigest.isEqual(sign(data), mac);
    }

    @Override
    public String toString() {
        return "ClusterKey[redacted]";
    }
}
