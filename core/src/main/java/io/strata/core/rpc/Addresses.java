package io.strata.core.rpc;

import java.net.InetSocketAddress;

/** Network addresses as users write them. */
public final class Addresses {
    private Addresses() {
    }

    /** Parses "host:port" (IPv6 as "[::1]:port") without resolving the name. */
    public static InetSocketAddress parse(String s) {
        int colon = s.lastIndexOf(':');
        if (colon <= 0 || colon == s.length() - 1) {
            throw new IllegalArgumentException("expected host:port, got \"" + s + "\"");
        }
        String host = s.substring(0, colon);
        if (host.startsWith("[") && host.endsWith("]")) {
            host = host.substring(1, host.length() - 1);
        }
        int port;
        try {
            port = Integer.parseInt(s.substring(colon + 1));
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("bad port in \"" + s + "\"");
        }
        if (port < 0 || port > 65535) {
            throw new IllegalArgumentException("port out of range in \"" + s + "\"");
        }
        return InetSocketAddress.createUnresolved(host, port);
    }
}
