package io.strata.harness;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.ServerSocket;

/** Loopback ports for the daemons a harness starts. */
final class Ports {
    private Ports() {
    }

    /**
     * A TCP port free on this machine when asked; another process may take it before the caller
     * binds it, which the harness accepts for tests and benchmarks.
     */
    static int free() {
        try (ServerSocket s = new ServerSocket(0)) {
            s.setReuseAddress(true);
            return s.getLocalPort();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
