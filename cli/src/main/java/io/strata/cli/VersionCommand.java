package io.strata.cli;

import io.strata.core.rpc.EchoService;
import io.strata.core.rpc.Transport;
import java.util.Locale;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;

/** {@code strata version}: the build, the JVM, and which network transports load here. */
@Command(name = "version", mixinStandardHelpOptions = true,
        description = {"Print the Strata version, the JVM and the available transports.", "",
                "Which network transports (nio, epoll, io_uring) load on this machine and which one `auto` picks. The "
                        + "same as `strata --version`."},
        footerHeading = "%nExamples:%n",
        footer = {"  strata version"})
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
