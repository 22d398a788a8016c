package io.strata.core.tls;

import io.netty.handler.ssl.OpenSsl;
import io.netty.handler.ssl.SslProvider;
import java.util.Locale;

/** Who does the TLS work: BoringSSL (netty-tcnative) or the JDK's SSLEngine. */
public enum TlsEngine {
    OPENSSL, JDK;

    /** {@code auto} prefers BoringSSL (cheaper per byte: it uses AES-NI/AVX directly), then the JDK's. */
    public static TlsEngine resolve(String name) {
        return switch (name.toLowerCase(Locale.ROOT)) {
            case "auto" -> OpenSsl.isAvailable() ? OPENSSL : JDK;
            case "openssl", "boringssl" -> {
                if (!OpenSsl.isAvailable()) {
                    Throwable why = OpenSsl.unavailabilityCause();
                    throw new IllegalArgumentException("engine openssl is not available here: "
                            + (why == null ? "unknown reason" : why.getMessage()));
                }
                yield OPENSSL;
            }
            case "jdk" -> JDK;
            default -> throw new IllegalArgumentException("unknown engine '" + name + "' (expected auto, openssl or jdk)");
        };
    }

    SslProvider provider() {
        return this == OPENSSL ? SslProvider.OPENSSL : SslProvider.JDK;
    }

    @Override
    public String toString() {
        return name().toLowerCase(Locale.ROOT);
    }
}
