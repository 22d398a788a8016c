package io.strata.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.util.List;
import java.util.OptionalInt;
import org.junit.jupiter.api.Test;

/**
 * The ports `strata up` records for a new cluster lie below the kernel's ephemeral range, so no
 * outgoing connection on the machine can take one while the cluster is down (a restart then
 * failed with "Address already in use").
 */
class UpLayoutTest {
    @Test
    void newClustersGetFreeDistinctPortsBelowTheEphemeralRange() throws Exception {
        List<Integer> ports = UpLayout.freePorts(7);
        assertThat(ports).hasSize(7).doesNotHaveDuplicates();
        OptionalInt low = UpLayout.ephemeralLow();
        java.nio.file.Path range = java.nio.file.Path.of("/proc/sys/net/ipv4/ip_local_port_range");
        if (java.nio.file.Files.isReadable(range)) {
            // what a shell's `cat` shows: a reader that stopped at the file's reported size of 0 saw "3" of "32768"
            try (java.io.InputStream in = java.nio.file.Files.newInputStream(range)) {
                String first = new String(in.readAllBytes()).trim().split("\\s+")[0];
                assertThat(low).hasValue(Integer.parseInt(first));
            }
        }
        if (low.isPresent() && low.getAsInt() - UpLayout.PORT_FLOOR >= 64 * 7) {
            assertThat(ports).allSatisfy(p -> assertThat(p).isBetween(UpLayout.PORT_FLOOR, low.getAsInt() - 1));
        }
        for (int p : ports) {
            try (ServerSocket s = new ServerSocket()) {
                s.bind(new InetSocketAddress(InetAddress.getByName(UpLayout.HOST), p)); // still free
            }
        }
    }
}
