package io.strata.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.strata.bench.Table;
import io.strata.core.DataSize;
import io.strata.core.Status;
import io.strata.core.StrataException;
import io.strata.core.auth.Credentials;
import java.io.IOException;
import java.io.PrintWriter;
import java.net.ConnectException;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import javax.net.ssl.SSLException;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * {@code strata prefetch ...}: prefetch hints through the scheduler hooks' HTTP API
 * (docs/scheduler-hooks.md), as a scheduler would post them. The hooks server is
 * {@code --hooks HOST:PORT}, else {@code $STRATA_HOOKS}, else the one {@code strata up} started;
 * over HTTPS, its certificate is checked against {@code --ca-file}, else {@code $STRATA_HOOKS_CA},
 * else the local cluster's CA ({@link HooksEndpoint}).
 */
@Command(name = "prefetch", mixinStandardHelpOptions = true,
        description = {"Prefetch hints: stage a job's data into L2 before it starts (submit, status, cancel, list, end).", "",
                "A hint names a job, its paths (files, directories, globs), a deadline, a priority and the job's nodes; "
                        + "the L2 agents on those nodes fetch the data from L3 once for every job that wants it, "
                        + "and the job's reads then come from L2. Ending the job releases what it pinned."},
        subcommands = {PrefetchCommand.Submit.class, PrefetchCommand.StatusCmd.class, PrefetchCommand.Cancel.class,
                PrefetchCommand.ListCmd.class, PrefetchCommand.End.class},
        footerHeading = "%nExamples:%n",
        footer = {"  strata prefetch submit --job train-7 --path /datasets/imagenet \\",
                "        --deadline 30m --node gpu-01 --node gpu-02",
                "  strata prefetch status 12 --watch",
                "  strata prefetch list --job train-7",
                "  strata prefetch end train-7"})
final class PrefetchCommand {
    private static final ObjectMapper JSON = new ObjectMapper();

    private PrefetchCommand() {
    }

    abstract static class Base implements Callable<Integer> {
        @Option(names = "--hooks", paramLabel = "HOST:PORT|URL",
                description = "The hooks server (default: $STRATA_HOOKS, else the local cluster's); HOST:PORT is https:// when a CA file is known.")
        String hooks;

        @Option(names = "--ca-file", paramLabel = "FILE",
                description = "CA certificate (PEM) that issued the hooks server's certificate, to verify it over HTTPS "
                        + "(default: $STRATA_HOOKS_CA; for the local cluster, its CA when it runs TLS).")
        Path caFile;

        @Option(names = "--data", paramLabel = "DIR", description = "The local cluster's data directory (default: $STRATA_DATA, else data/).")
        Path data;

        @Option(names = "--token-file", paramLabel = "FILE",
                description = "Bearer token for the hooks server (default: the local cluster's admin token, when it has one).")
        Path tokenFile;

        @CommandLine.Spec
        CommandLine.Model.CommandSpec spec;

        private HooksEndpoint endpoint;
        private HttpClient http;

        PrintWriter out() {
            return spec.commandLine().getOut();
        }

        @Override
        public Integer call() throws Exception {
            try {
                return run();
            } finally {
                out().flush();
            }
        }

        abstract int run() throws Exception;

        /** The hooks server and the CA to check it with, resolved once. */
        HooksEndpoint endpoint() {
            if (endpoint == null) {
                endpoint = HooksEndpoint.resolve(hooks, caFile, data, System::getenv);
            }
            return endpoint;
        }

        String base() {
            return endpoint().url();
        }

        private HttpClient http() {
            if (http == null) {
                http = endpoint().client(Duration.ofSeconds(5));
            }
            return http;
        }

        /** Sends a request; a 4xx/5xx becomes an error with the server's message. */
        JsonNode call(String method, String path, JsonNode body) throws IOException, InterruptedException {
            HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(base() + path)).timeout(Duration.ofMinutes(2))
                    .header("Content-Type", "application/json");
            Path token = tokenFile != null ? tokenFile : ClusterDir.resolve(data).root.resolve(UpAuth.ADMIN_TOKEN);
            if (tokenFile != null || Files.exists(token)) {
                b.header("Authorization", "Bearer " + Credentials.read(token).token());
            }
            b.method(method, body == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(body.toString()));
            HttpResponse<String> r;
            try {
                r = http().send(b.build(), HttpResponse.BodyHandlers.ofString());
            } catch (ConnectException e) {
                throw new StrataException(Status.CONNECTION_FAILED, "cannot reach the hooks server at " + base() + " (is `strata hooks` running?)");
            } catch (SSLException e) {
                throw tlsFailed(e);
            } catch (IOException e) {
                if (base().startsWith("http://") && !(e instanceof HttpTimeoutException)) {
                    throw new StrataException(Status.CONNECTION_FAILED, "the hooks server at " + base() + " gave no HTTP answer (" + e
                            + "); if it serves HTTPS (its config has [tls]), give its CA with --ca-file or $" + HooksEndpoint.ENV_CA
                            + ", or an https:// URL");
                }
                throw e;
            }
            JsonNode n;
            try {
                n = JSON.readTree(r.body());
            } catch (IOException e) {
                throw new StrataException(Status.INTERNAL, "the hooks server answered " + r.statusCode() + " with no JSON: " + r.body());
            }
            if (r.statusCode() >= 400) {
                Status s = Status.INTERNAL;
                try {
                    s = Status.valueOf(n.path("status").asText("INTERNAL"));
                } catch (IllegalArgumentException ignored) {
                    // an unknown status name: keep INTERNAL
                }
                throw new StrataException(s, n.path("error").asText(r.body()));
            }
            return n;
        }

        /** A failed handshake, with what to check: the CA the server was verified with, or that none was given. */
        private StrataException tlsFailed(SSLException e) {
            HooksEndpoint ep = endpoint();
            String hint = ep.caFile().map(ca -> "; is " + ca + " (" + ep.caFrom() + ") the CA that issued its certificate?")
                    .orElse("; give the CA that issued its certificate with --ca-file or $" + HooksEndpoint.ENV_CA);
            return new StrataException(Status.CONNECTION_FAILED, "TLS with the hooks server at " + base() + " failed: " + e.getMessage() + hint);
        }

        /** Shows a hint until it settles, one progress line a second (redrawn in place on a terminal). */
        int watch(String id) throws Exception {
            boolean tty = System.console() != null;
            while (true) {
                JsonNode h = call("GET", "/v1/hints/" + id, null);
                String line = progressLine(h);
                if (tty) {
                    out().print("\r" + line + "   ");
                } else {
                    out().println(line);
                }
                out().flush();
                String s = h.path("state").asText();
                if (s.equals("ready") || s.equals("failed") || s.equals("cancelled")) {
                    if (tty) {
                        out().println();
                    }
                    if (!h.path("message").asText().isEmpty()) {
                        out().println(h.path("message").asText());
                    }
                    return s.equals("ready") ? 0 : 1;
                }
                Thread.sleep(1000);
            }
        }
    }

    static String progressLine(JsonNode h) {
        long total = h.path("bytes_total").asLong();
        long done = h.path("bytes_done").asLong();
        double p = h.path("progress").asDouble();
        int width = 30;
        int filled = (int) Math.round(p * width);
        StringBuilder bar = new StringBuilder("[");
        for (int i = 0; i < width; i++) {
            bar.append(i < filled ? '#' : '.');
        }
        bar.append(']');
        String eta = h.path("eta_seconds").isNumber() ? "  ETA " + Math.round(h.path("eta_seconds").asDouble()) + "s" : "";
        return String.format("hint %s %s %3.0f%% %s / %s%s  %s", h.path("id").asText(), bar, p * 100, DataSize.human(done),
                DataSize.human(total), eta, h.path("state").asText());
    }

    @Command(name = "submit", mixinStandardHelpOptions = true, description = "Post a hint; prints its id.",
            footerHeading = "%nExamples:%n",
            footer = {"  strata prefetch submit --job train-7 --path /datasets/x --deadline 30m",
                    "  strata prefetch submit --job eval --path '/data/val/*.tar' --wait"})
    static final class Submit extends Base {
        @Option(names = "--job", required = true, description = "The scheduler's job (ending it releases the hint).")
        String job;

        @Option(names = "--path", required = true, paramLabel = "PATH", description = "A file, directory or glob (repeat for more).")
        List<String> paths = new ArrayList<>();

        @Option(names = "--deadline", description = "When the job starts: 2026-12-01T20:00:00Z, or a delay (90s, 30m, 2h).")
        String deadline;

        @Option(names = "--priority", description = "0..9, higher first (default 0).")
        Integer priority;

        @Option(names = "--node", paramLabel = "NODE", description = "A node of the job (repeat); default: any L2 agent.")
        List<String> nodes = new ArrayList<>();

        @Option(names = "--supersedes", paramLabel = "ID", description = "A hint this one replaces (it is cancelled).")
        String supersedes;

        @Option(names = "--qos", paramLabel = "CLASS", description = "The QoS class the agents fetch in: prefetch (default), background, "
                + "or training-read for a job that runs already.")
        String qos;

        @Option(names = "--wait", description = "Show progress until the hint is ready (exit 1 if it fails or is cancelled).")
        boolean await;

        @Override
        int run() throws Exception {
            ObjectNode b = JSON.createObjectNode().put("job", job);
            ArrayNode ps = b.putArray("paths");
            paths.forEach(ps::add);
            if (deadline != null) {
                b.put("deadline", deadline);
            }
            if (priority != null) {
                b.put("priority", priority);
            }
            if (!nodes.isEmpty()) {
                ArrayNode ns = b.putArray("nodes");
                nodes.forEach(ns::add);
            }
            if (supersedes != null) {
                b.put("supersedes", supersedes);
            }
            if (qos != null) {
                b.put("qos", qos);
            }
            JsonNode h = call("POST", "/v1/hints", b);
            String id = h.path("id").asText();
            out().println("hint " + id + ": " + h.path("files").asLong() + " files, " + h.path("state").asText()
                    + "; follow it with: strata prefetch status " + id + " --watch");
            return await ? watch(id) : 0;
        }
    }

    @Command(name = "status", mixinStandardHelpOptions = true, description = "A hint's state, bytes, ETA and progress per node.",
            footerHeading = "%nExamples:%n", footer = {"  strata prefetch status 12", "  strata prefetch status 12 --watch"})
    static final class StatusCmd extends Base {
        @Parameters(paramLabel = "ID")
        String id;

        @Option(names = "--watch", description = "Redraw a progress bar every second until the hint settles.")
        boolean watch;

        @Override
        int run() throws Exception {
            if (watch) {
                return watch(id);
            }
            JsonNode h = call("GET", "/v1/hints/" + id, null);
            PrintWriter o = out();
            o.println(progressLine(h));
            o.println("job:       " + h.path("job").asText());
            o.println("paths:     " + h.path("paths"));
            o.println("deadline:  " + h.path("deadline").asText("none") + "   priority " + h.path("priority").asInt() + "   qos "
                    + h.path("qos").asText());
            o.println("files:     " + h.path("files").asLong());
            if (h.path("eta").isTextual()) {
                o.println("eta:       " + h.path("eta").asText());
            }
            if (!h.path("message").asText().isEmpty()) {
                o.println("message:   " + h.path("message").asText());
            }
            Table t = new Table("node", "staged", "total");
            h.path("per_node").properties().forEach(e -> t.row(e.getKey(), DataSize.human(e.getValue().path("bytes_done").asLong()),
                    DataSize.human(e.getValue().path("bytes_total").asLong())));
            o.print(t.render());
            return 0;
        }
    }

    @Command(name = "cancel", mixinStandardHelpOptions = true, description = "Stop a hint (no new fetch; its pins are released).",
            footerHeading = "%nExamples:%n", footer = {"  strata prefetch cancel 12"})
    static final class Cancel extends Base {
        @Parameters(paramLabel = "ID")
        String id;

        @Override
        int run() throws Exception {
            JsonNode h = call("DELETE", "/v1/hints/" + id, null);
            out().println("hint " + id + ": " + h.path("state").asText());
            return 0;
        }
    }

    @Command(name = "list", mixinStandardHelpOptions = true, description = "Every hint (or one job's).",
            footerHeading = "%nExamples:%n", footer = {"  strata prefetch list", "  strata prefetch list --job train-7"})
    static final class ListCmd extends Base {
        @Option(names = "--job", description = "Only this job's hints.")
        String job;

        @Override
        int run() throws Exception {
            JsonNode all = call("GET", "/v1/hints" + (job == null ? "" : "?job=" + URLEncoder.encode(job, StandardCharsets.UTF_8)), null);
            Table t = new Table("id", "job", "state", "progress", "bytes", "deadline");
            for (JsonNode h : all.path("hints")) {
                t.row(h.path("id").asText(), h.path("job").asText(), h.path("state").asText(),
                        String.format("%.0f%%", h.path("progress").asDouble() * 100), DataSize.human(h.path("bytes_total").asLong()),
                        h.path("deadline").asText("-"));
            }
            out().print(t.render());
            return 0;
        }
    }

    @Command(name = "end", mixinStandardHelpOptions = true, description = "End a job: cancel its hints still staging, release what they pinned, remove them.",
            footerHeading = "%nExamples:%n", footer = {"  strata prefetch end train-7"})
    static final class End extends Base {
        @Parameters(paramLabel = "JOB")
        String job;

        @Override
        int run() throws Exception {
            JsonNode r = call("POST", "/v1/jobs/" + URLEncoder.encode(job, StandardCharsets.UTF_8).replace("+", "%20") + "/end", null);
            out().println("job " + job + ": ended " + r.path("ended").size() + " hint(s)");
            return 0;
        }
    }
}
