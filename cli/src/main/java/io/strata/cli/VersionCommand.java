package io.strata.cli;

import io.strata.core.rpc.EchoService;
import io.strata.core.rpc.Transport;
import java.util.Locale;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;

/** {@code strata version}: the build, the JVM, and which network transports load here. */
@Command(name = "version", description = "Print the Strata version, the JVM and the available transports.")
final class VersionCommand implements Callable<Integer> {
    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    @Override
    public Integer call() {
        for (String line : new Provider().getVersion()) {
            spec.commandLine().getOut().println(line);
        }
        return 0;
    }

    static final class Provider implements CommandLine.IVersionProvider {
        @Override
        public String[] getVersion() {
            StringBuilder transports = new StringBuilder();
            for (Transport t : Transport.values()) {
                transports.append(transports.isEmpty() ? "" : ", ").append(t.name().toLowerCase(Locale.ROOT))
                        .append(t.available() ? "" : " (unavailable)");
            }
            return new String[]{
                    "strata " + EchoService.VERSION,
                    "java " + Runtime.version() + " (" + System.getProperty("java.vendor") + ")",
                    "transports: " + transports + "; default " + Transport.resolve("auto").name().toLowerCase(Locale.ROOT),
            };
        }
    }
}
