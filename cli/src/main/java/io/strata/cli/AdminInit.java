package io.strata.cli;

import io.strata.config.Durations;
import io.strata.core.auth.ClusterKey;
import io.strata.core.tls.CertificateAuthority;
import io.strata.store.AtomicFiles;
import io.strata.store.PrivateFiles;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * The roots of trust of a cluster that {@code strata up} does not run: {@code strata admin init}
 * makes the cluster key and a certificate authority in a directory of the operator's, and
 * {@code strata admin cert create} issues a host's certificate from that CA. Tokens come from
 * {@code strata admin token create --key} (docs/security.md, "A cluster of your own").
 */
final class AdminInit {
    static final String KEY_FILE = UpAuth.KEY_FILE;

    private AdminInit() {
    }

    @Command(name = "init", mixinStandardHelpOptions = true,
            description = {"Make the cluster key and a certificate authority for a cluster of your own.", "",
                    "Writes DIR/" + KEY_FILE + " (signs every token), DIR/" + UpTls.DIR + "/" + UpTls.CA_CERT + " and DIR/"
                            + UpTls.DIR + "/" + UpTls.CA_KEY + " (signs every certificate), the keys readable by their owner only. "
                            + "Refuses a directory that has either already: a new key or CA locks out every token or "
                            + "certificate of the old one. `strata up` does this for its own data directory."},
            footerHeading = "%nExamples:%n",
            footer = {"  strata admin init --dir /etc/strata",
                    "  strata admin init --dir /etc/strata --name prod --ca-validity 1825d"})
    static final class Init implements Callable<Integer> {
        @Option(names = "--dir", required = true, paramLabel = "DIR", description = "Where to write them (made if missing, mode 0700).")
        Path dir;

        @Option(names = "--name", defaultValue = "cluster", paramLabel = "NAME",
                description = "The cluster's name in the CA certificate (default ${DEFAULT-VALUE}).")
        String name;

        @Option(names = "--ca-validity", defaultValue = "3650d", paramLabel = "DURATION",
                description = "How long the CA certificate is good for (default ${DEFAULT-VALUE}).")
        String caValidity;

        @CommandLine.Spec
        CommandLine.Model.CommandSpec spec;

        @Override
        public Integer call() throws Exception {
            Duration validity = positive("--ca-validity", caValidity);
            Path key = dir.resolve(KEY_FILE);
            Path tls = dir.resolve(UpTls.DIR);
            for (Path p : List.of(key, tls.resolve(UpTls.CA_KEY), tls.resolve(UpTls.CA_CERT))) {
                if (Files.exists(p)) {
                    throw new IllegalArgumentException(p + " exists already: " + dir + " holds a cluster's roots of trust. A new key or "
                            + "CA would lock out every token or certificate made from the old one; to start over, move the "
                            + "directory away first");
                }
            }
            PrivateFiles.createDirectories(dir);
            PrivateFiles.createDirectories(tls);
            ClusterKey.generate().writeNew(key);
            CertificateAuthority ca = CertificateAuthority.generate("strata cluster CA " + name, Instant.now(), validity);
            AtomicFiles.plain().write(tls.resolve(UpTls.CA_KEY), ca.keyPem(), true);
            AtomicFiles.plain().write(tls.resolve(UpTls.CA_CERT), ca.certificatePem(), true);
            PrintWriter out = spec.commandLine().getOut();
            out.println("cluster key:    " + key + " (every daemon that serves needs it: [auth] key-file)");
            out.println("CA certificate: " + tls.resolve(UpTls.CA_CERT) + " (every process: [tls] ca-file)");
            out.println("CA key:         " + tls.resolve(UpTls.CA_KEY) + " (only here: keep it off the cluster's hosts)");
            out.println("CA valid until: " + ca.certificate().getNotAfter().toInstant());
            out.println("next, per daemon and per host:");
            out.println("  strata admin token create --key " + key + " --role storage --subject node-1 --ttl 365d");
            out.println("  strata admin cert create --ca " + tls + " --name storage-1 --host HOST --out DIR");
            out.flush();
            return 0;
        }
    }

    @Command(name = "cert", mixinStandardHelpOptions = true,
            description = {"Issue TLS certificates from the cluster's CA (docs/security.md)."},
            subcommands = {CertCreate.class},
            footerHeading = "%nExamples:%n",
            footer = {"  strata admin cert create --ca /etc/strata/tls --name storage-1 \\",
                    "        --host st1.example.org --host 10.0.0.11 --out /tmp/st1"})
    static final class Cert {
    }

    @Command(name = "create", mixinStandardHelpOptions = true,
            description = {"Issue a certificate and key for one process from the cluster's CA.", "",
                    "Writes OUT/NAME.pem and OUT/NAME.key (the key readable by its owner only) and prints the [tls] table "
                            + "that names them. The certificate is for both ends of a connection (server and client "
                            + "authentication) and names the --host values (DNS names or IP addresses): a client that dials "
                            + "the process must dial one of them. Issuing again replaces the files (to renew or rotate)."},
            footerHeading = "%nExamples:%n",
            footer = {"  strata admin cert create --ca /etc/strata/tls --name meta --host meta1 \\",
                    "        --out /etc/strata/meta",
                    "  strata admin cert create --name mount-gpu7 --host gpu7 --ttl 90d \\",
                    "        --out /tmp/gpu7"})
    static final class CertCreate implements Callable<Integer> {
        @Option(names = "--ca", paramLabel = "DIR",
                description = "The directory with " + UpTls.CA_CERT + " and " + UpTls.CA_KEY + " (default: the local cluster's DATA/"
                        + UpTls.DIR + ").")
        Path ca;

        @Option(names = "--data", paramLabel = "DIR",
                description = "Data directory of the local `strata up` cluster whose CA to use (default: $" + ClusterDir.ENV + ", else data/).")
        Path data;

        @Option(names = "--name", required = true, paramLabel = "NAME", description = "The process's name: the certificate's CN and the files' names.")
        String name;

        @Option(names = "--host", required = true, paramLabel = "HOST",
                description = "A name or address the process is dialled at (repeatable).")
        List<String> hosts;

        @Option(names = "--ttl", defaultValue = "365d", paramLabel = "DURATION",
                description = "How long the certificate is good for (default ${DEFAULT-VALUE}; never past the CA's own end).")
        String ttl;

        @Option(names = "--out", required = true, paramLabel = "DIR", description = "Where to write NAME.pem and NAME.key (made if missing).")
        Path out;

        @CommandLine.Spec
        CommandLine.Model.CommandSpec spec;

        @Override
        public Integer call() throws Exception {
            Duration validity = positive("--ttl", ttl);
            if (!name.matches("[A-Za-z0-9][A-Za-z0-9._-]{0,99}")) {
                throw new IllegalArgumentException("--name must be letters, digits, '.', '_' or '-' (it names files), got \"" + name + "\"");
            }
            for (String h : hosts) {
                if (h.isBlank() || h.chars().anyMatch(c -> c <= ' ' || c == ',' || c == '/')) {
                    throw new IllegalArgumentException("--host must be a DNS name or an IP address, got \"" + h + "\"");
                }
            }
            Path dir = ca != null ? ca : ClusterDir.resolve(data).root.resolve(UpTls.DIR);
            Path caCert = dir.resolve(UpTls.CA_CERT);
            Path caKey = dir.resolve(UpTls.CA_KEY);
            if (!Files.exists(caCert) || !Files.exists(caKey)) {
                throw new IllegalArgumentException("no CA in " + dir + " (" + UpTls.CA_CERT + " and " + UpTls.CA_KEY
                        + "): give --ca DIR (made by `strata admin init`), or --data DIR of a `strata up` cluster");
            }
            CertificateAuthority authority = CertificateAuthority.read(caCert, caKey);
            CertificateAuthority.Issued issued = authority.issue(name, List.copyOf(hosts), Instant.now(), validity);
            PrivateFiles.createDirectories(out);
            Path cert = out.resolve(name + ".pem");
            Path key = out.resolve(name + ".key");
            AtomicFiles.plain().write(key, issued.keyPem(), true);
            AtomicFiles.plain().write(cert, issued.certificatePem(), true);
            PrintWriter w = spec.commandLine().getOut();
            w.println("# " + name + ": valid until " + issued.certificate().getNotAfter().toInstant() + ", for " + String.join(", ", hosts));
            w.println("[tls]");
            w.println("cert-file = \"" + toml(cert) + "\"");
            w.println("key-file = \"" + toml(key) + "\"");
            w.println("ca-file = \"" + toml(caCert) + "\"  # copy it to the host along with the two files above");
            w.flush();
            return 0;
        }
    }

    private static Duration positive(String option, String text) {
        Duration d = Durations.parse(text);
        if (d.isNegative() || d.isZero()) {
            throw new IllegalArgumentException(option + " must be positive, got " + text);
        }
        return d;
    }

    private static String toml(Path p) {
        return p.toAbsolutePath().toString().replace("\\", "\\\\").replace("\"", "\\\"");
    }
}
