package io.strata.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.strata.core.util.Eventually;
import io.strata.fuse.FuseMount;
import io.strata.hooks.HooksHttp;
import io.strata.testing.Slow;
import java.io.IOException;
import java.io.Reader;
import java.math.BigDecimal;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.MessageDigest;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.io.TempDir;

/**
 * The Slurm integration of the scheduler hooks ({@code scheduler-hooks/slurm/burst_buffer.lua})
 * against a real single-node Slurm from Debian's packages: munged with a generated key,
 * slurmctld and slurmd on loopback with a generated slurm.conf whose burst buffer plugin is
 * {@code burst_buffer/lua} running the repository's script, and a {@code strata up} cluster whose
 * hooks server the script talks to, over HTTPS verified with the cluster CA ({@code STRATA_HOOKS_CA}:
 * the script, and the job through the environment the script gives it). A batch job with the
 * directive {@code #BB_LUA strata prefetch}
 * waits in stage-in until its hint is ready, then reads the dataset through the FUSE mount from
 * L2; its teardown ends the hint. A hint the hooks refuse holds the job with the reason. Last,
 * the controller's prolog and epilog ({@code prolog.sh}, {@code epilog.sh}) are added: a job
 * with the directive in its comment starts once the prolog's hint is ready, and the epilog ends it.
 *
 * <p>The Slurm node is named {@code l2-1}, the node label of the cluster's first L2 agent, so the
 * hint names the job's node and is staged there. Jobs run as {@code nobody}: Slurm refuses burst
 * buffers to root's jobs. The dataset is written with {@code strata put} (another client), so
 * nothing of it is in the mount's caches before the job reads it.
 *
 * <p>Skipped, with the reason, when Slurm (with its lua burst buffer plugin), munge or curl is not
 * installed, when not run as root, or when FUSE is unavailable.
 */
@Slow
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class SlurmIT {
    private static final Duration T = Duration.ofSeconds(60);
    /** The Slurm node, named after the L2 agent on "it" ({@code strata up}'s first agent). */
    private static final String NODE = "l2-1";
    private static final int FILES = 4;
    private static final int FILE_SIZE = 4 << 20;
    private static final int CHUNK = 1 << 20;
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    /** The hooks API's client: HTTPS, trusting the cluster CA. */
    static HttpClient hooksHttp;

    @TempDir
    static Path data;
    @TempDir
    static Path slurm;
    static String d;
    static Path mnt;
    static String schedulerToken;
    static String hooks;
    /** The cluster CA's certificate, readable by everyone (the job runs as nobody; the data directory is root's). */
    static Path ca;
    static Path conf;
    static Path out;
    static final List<Process> daemons = new ArrayList<>();

    @BeforeAll
    static void up() throws Exception {
        List<String> missing = new ArrayList<>();
        for (String tool : List.of("munged", "slurmctld", "slurmd", "sbatch", "squeue", "scontrol", "curl")) {
            if (which(tool).isEmpty()) {
                missing.add(tool);
            }
        }
        assumeTrue(missing.isEmpty(), () -> skip("not installed: " + String.join(", ", missing)
                + " (Debian: apt-get install slurmctld slurmd slurm-client munge curl)"));
        assumeTrue(luaPluginInstalled(), () -> skip("Slurm's burst_buffer_lua.so is not installed (Debian: slurm-wlm-basic-plugins)"));
        assumeTrue("0".equals(run(List.of("id", "-u")).strip()), () -> skip("the Slurm daemons need root"));
        assumeTrue(!run(List.of("id", "-u", "nobody")).isBlank(), () -> skip("no user nobody to run the jobs as"));
        assumeTrue(FuseMount.unavailable().isEmpty(), () -> skip("FUSE is not available: " + FuseMount.unavailable().orElse("")));

        // The job runs as nobody: the data directory is private to root, so the mount goes where nobody reaches it.
        Files.setPosixFilePermissions(slurm, PosixFilePermissions.fromString("rwxr-xr-x"));
        mnt = Files.createDirectory(slurm.resolve("mnt"));
        CliTest.Run up = CliTest.strata("up", "--data", data.toString(), "--mount", mnt.toString());
        assertThat(up.code()).as(up.err()).isZero();
        d = "--data=" + data;
        // the hooks API wants a token: one of role scheduler for the Slurm scripts and this test
        CliTest.Run token = CliTest.strata("admin", "token", "create", "--role", "scheduler", "--ttl", "1h", d);
        assertThat(token.code()).as(token.err()).isZero();
        schedulerToken = token.out().strip();
        hooks = "127.0.0.1:" + properties(data.resolve(UpLayout.FILE)).getProperty("hooks.http");
        ca = Files.copy(data.resolve(UpTls.DIR).resolve(UpTls.CA_CERT), slurm.resolve("strata-ca.pem"));
        Files.setPosixFilePermissions(ca, PosixFilePermissions.fromString("rw-r--r--"));
        hooksHttp = HooksHttp.client(Optional.of(ca), Duration.ofSeconds(5));
        assertThat(get("/v1/health").statusCode()).isEqualTo(200);

        startSlurm();
    }

    private static String skip(String why) {
        String msg = "SlurmIT skipped: " + why;
        System.out.println(msg);
        return msg;
    }

    /** munged, slurmctld and slurmd in the foreground as children of this JVM, their files under {@link #slurm}. */
    private static void startSlurm() throws Exception {
        Path munge = Files.createDirectories(slurm.resolve("munge"));
        Files.setPosixFilePermissions(munge, PosixFilePermissions.fromString("rwx------"));
        byte[] key = new byte[1024];
        new Random().nextBytes(key);
        Path keyFile = Files.write(munge.resolve("munge.key"), key);
        Files.setPosixFilePermissions(keyFile, PosixFilePermissions.fromString("r--------"));
        Path socket = munge.resolve("munge.sock");
        Path logs = Files.createDirectories(slurm.resolve("log"));
        daemons.add(start(logs.resolve("munged.out"), which("munged").orElseThrow(), "--foreground", "--force",
                "--key-file=" + keyFile, "--socket=" + socket, "--pid-file=" + munge.resolve("munged.pid"),
                "--seed-file=" + munge.resolve("seed"), "--log-file=" + logs.resolve("munged.log")));
        Eventually.await("munged's socket", T, () -> Files.exists(socket));

        conf = Files.createDirectories(slurm.resolve("etc"));
        out = Files.createDirectories(slurm.resolve("out"));
        Files.setPosixFilePermissions(out, PosixFilePermissions.fromString("rwxrwxrwx"));
        Path state = Files.createDirectories(slurm.resolve("state"));
        Path spool = Files.createDirectories(slurm.resolve("spool"));
        String host = run(List.of("hostname", "-s")).strip();
        int ctldPort = freePort();
        int slurmdPort = freePort();
        Files.writeString(conf.resolve("slurm.conf"), """
                ClusterName=strata-it
                SlurmctldHost=%1$s(127.0.0.1)
                SlurmctldPort=%2$d
                SlurmdPort=%3$d
                AuthType=auth/munge
                CredType=cred/munge
                AuthInfo=socket=%4$s
                SlurmUser=root
                SlurmdUser=root
                StateSaveLocation=%5$s
                SlurmdSpoolDir=%6$s
                SlurmctldPidFile=%7$s/slurmctld.pid
                SlurmdPidFile=%7$s/slurmd.pid
                SlurmctldLogFile=%7$s/slurmctld.log
                SlurmdLogFile=%7$s/slurmd.log
                SlurmctldDebug=info
                SlurmdDebug=info
                DebugFlags=BurstBuffer
                ProctrackType=proctrack/linuxproc
                TaskPlugin=task/none
                JobAcctGatherType=jobacct_gather/none
                AccountingStorageType=accounting_storage/none
                JobCompType=jobcomp/none
                MpiDefault=none
                SwitchType=switch/none
                SchedulerType=sched/builtin
                SchedulerParameters=sched_interval=1
                SelectType=select/cons_tres
                SelectTypeParameters=CR_CPU
                ReturnToService=2
                MailProg=/bin/true
                BurstBufferType=burst_buffer/lua
                NodeName=%8$s NodeAddr=127.0.0.1 NodeHostname=%1$s CPUs=1 State=UNKNOWN
                PartitionName=it Nodes=%8$s Default=YES MaxTime=INFINITE State=UP
                """.formatted(host, ctldPort, slurmdPort, socket, state, spool, logs, NODE));
        Files.writeString(conf.resolve("burst_buffer.conf"), """
                StageInTimeout=300
                StageOutTimeout=60
                OtherTimeout=60
                Flags=TeardownFailure
                """);
        Files.copy(Path.of("..", "scheduler-hooks", "slurm", "burst_buffer.lua").toAbsolutePath().normalize(),
                conf.resolve("burst_buffer.lua"));
        Path tokenFile = Files.writeString(conf.resolve("scheduler.token"), schedulerToken + "\n");
        Files.setPosixFilePermissions(tokenFile, PosixFilePermissions.fromString("rw-------"));
        // the job runs as nobody and looks at its hints with a copy it can read (a test's shortcut: a site does not hand
        // the scheduler's token to jobs)
        Path jobToken = Files.writeString(out.resolve("job.token"), schedulerToken + "\n");
        Files.setPosixFilePermissions(jobToken, PosixFilePermissions.fromString("rw-r--r--"));
        // HOST:PORT with a CA file: the script speaks https:// and has curl verify the server with the CA
        Files.writeString(conf.resolve("strata-bb.conf"), """
                STRATA_HOOKS=%s
                STRATA_HOOKS_CA=%s
                STRATA_BB_POLL=1s
                STRATA_BB_MAX_WAIT=2m
                STRATA_BB_MOUNT=%s
                STRATA_BB_TOKEN_FILE=%s
                """.formatted(hooks, ca, mnt, tokenFile));

        Path slurmConf = conf.resolve("slurm.conf");
        daemons.add(start(logs.resolve("slurmctld.out"), which("slurmctld").orElseThrow(), "-D", "-f", slurmConf.toString()));
        daemons.add(start(logs.resolve("slurmd.out"), which("slurmd").orElseThrow(), "-D", "-f", slurmConf.toString(), "-N", NODE));
        try {
            Eventually.await("the Slurm node " + NODE + " is idle", T, () -> slurm("sinfo", "-h", "-n", NODE, "-o", "%T").strip().equals("idle"));
        } catch (RuntimeException e) {
            throw new AssertionError(e.getMessage() + "\nslurmctld: " + tail(logs.resolve("slurmctld.log")) + "\nslurmd: "
                    + tail(logs.resolve("slurmd.log")) + "\nmunged: " + tail(logs.resolve("munged.log")), e);
        }
    }

    private static String tail(Path log) {
        try {
            List<String> lines = Files.readAllLines(log);
            return String.join("\n", lines.subList(Math.max(0, lines.size() - 15), lines.size()));
        } catch (IOException e) {
            return e.toString();
        }
    }

    @AfterAll
    static void down() {
        for (int i = daemons.size() - 1; i >= 0; i--) {
            Process p = daemons.get(i);
            p.descendants().forEach(ProcessHandle::destroyForcibly);
            p.destroy();
            try {
                if (!p.waitFor(10, TimeUnit.SECONDS)) {
                    p.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        if (d != null) {
            assertThat(CliTest.strata("down", "--data", data.toString()).code()).isZero();
        }
    }

    @Test
    @Order(1)
    void aJobStartsOnlyOnceItsHintIsReadyReadsItsDataFromL2AndItsTeardownEndsTheHint() throws Exception {
        MessageDigest digest = MessageDigest.getInstance("SHA-256");
        assertThat(CliTest.strata("mkdir", "-p", "/datasets/slurm", d).code()).isZero();
        CliTest.Run policy = CliTest.strata("policy", "set", "/datasets/slurm", "stripe.chunk-size=1MiB", d);
        assertThat(policy.code()).as(policy.err()).isZero();
        Random random = new Random(7);
        for (int i = 0; i < FILES; i++) {
            byte[] bytes = new byte[FILE_SIZE];
            random.nextBytes(bytes);
            digest.update(bytes);
            Path src = Files.write(slurm.resolve("part-" + i), bytes);
            CliTest.Run put = CliTest.strata("put", src.toString(), "/datasets/slurm/", d);
            assertThat(put.code()).as(put.err()).isZero();
        }
        String expected = HexFormat.of().formatHex(digest.digest());
        double hitsBefore = cachedHits();

        // The directive names the dataset by its path under the mount (STRATA_BB_MOUNT maps it).
        Path script = Files.writeString(out.resolve("train.sh"), """
                #!/bin/bash
                #SBATCH --output=%1$s/train-%%j.out
                #BB_LUA strata prefetch path=%2$s/datasets/slurm deadline=5m priority=5 qos=background
                date +%%s.%%N > %1$s/start-$SLURM_JOB_ID
                curl -sS --cacert "$STRATA_HOOKS_CA" -H "Authorization: Bearer $(cat %1$s/job.token)" \\
                  "$STRATA_HOOKS/v1/hints?job=$SLURM_JOB_ID" > %1$s/hints-$SLURM_JOB_ID.json
                echo "$STRATA_HOOKS" > %1$s/hooks-$SLURM_JOB_ID
                cat %2$s/datasets/slurm/part-0 %2$s/datasets/slurm/part-1 %2$s/datasets/slurm/part-2 %2$s/datasets/slurm/part-3 \\
                  | sha256sum | cut -d' ' -f1 > %1$s/sha-$SLURM_JOB_ID
                """.formatted(out, mnt));
        String job = sbatch(script);

        // Follow the job: it waits in stage-in, then runs and completes.
        Set<String> seen = new LinkedHashSet<>();
        Eventually.await("job " + job + " completes", Duration.ofSeconds(120), () -> {
            seen.add(slurm("squeue", "-h", "-j", job, "-o", "%T %r").strip());
            String st = jobState(job);
            return st.equals("COMPLETED") || st.equals("FAILED") || st.equals("CANCELLED");
        });
        String log = Files.exists(out.resolve("train-" + job + ".out")) ? Files.readString(out.resolve("train-" + job + ".out")) : "";
        assertThat(jobState(job)).as("job output: " + log + "\nslurmctld log: " + strataLog()).isEqualTo("COMPLETED");
        assertThat(seen).as("the job waited in stage-in").contains("PENDING BurstBufferStageIn");

        // Started only after the hint was ready: the job saw it ready, ready before it started.
        BigDecimal startedAt = new BigDecimal(Files.readString(out.resolve("start-" + job)).strip());
        Instant started = Instant.ofEpochSecond(startedAt.longValue(), startedAt.remainder(BigDecimal.ONE).movePointRight(9).longValue());
        assertThat(Files.readString(out.resolve("hooks-" + job)).strip()).as("the job's STRATA_HOOKS").isEqualTo("https://" + hooks);
        JsonNode hints = JSON.readTree(out.resolve("hints-" + job + ".json").toFile()).path("hints");
        assertThat(hints).as("the job's hints at its start").hasSize(1);
        JsonNode hint = hints.get(0);
        assertThat(hint.path("state").asText()).isEqualTo("ready");
        assertThat(hint.path("paths").get(0).asText()).isEqualTo("/datasets/slurm");
        assertThat(hint.path("nodes").get(0).asText()).as("the job's node").isEqualTo(NODE);
        assertThat(hint.path("files").asLong()).isEqualTo(FILES);
        assertThat(hint.path("qos").asText()).as("the directive's class").isEqualTo("background");
        Instant readyAt = Instant.parse(hint.path("ready_at").asText());
        assertThat(readyAt).as("ready_at is before the job's start").isBeforeOrEqualTo(started);

        // It read the right bytes, from L2.
        assertThat(Files.readString(out.resolve("sha-" + job)).strip()).isEqualTo(expected);
        double hits = cachedHits() - hitsBefore;
        System.out.printf("SlurmIT: job %s: hint %s ready at %s, job started at %s (%d ms later); %.0f L2 cached hits for %d chunks%n", job,
                hint.path("id").asText(), readyAt, started, Duration.between(readyAt, started).toMillis(), hits, FILES * FILE_SIZE / CHUNK);
        assertThat(hits).as("the mount's L2 cached hits while the job read %d chunks", FILES * FILE_SIZE / CHUNK)
                .isGreaterThanOrEqualTo(FILES * FILE_SIZE / CHUNK);

        // Teardown ended the hint: it is gone.
        String id = hint.path("id").asText();
        Eventually.await("the teardown ends hint " + id, T, () -> get("/v1/hints/" + id).statusCode() == 404);
        assertThat(JSON.readTree(get("/v1/hints?job=" + job).body()).path("hints")).isEmpty();
    }

    @Test
    @Order(2)
    void aBadDirectiveIsRefusedAtSubmissionAndAHintTheHooksRefuseHoldsTheJobWithTheReason() throws Exception {
        Path typo = Files.writeString(out.resolve("typo.sh"), """
                #!/bin/bash
                #BB_LUA strata prefetch path=/datasets/slurm priority=12
                true
                """);
        Result refused = slurmResult(List.of("sbatch", "--uid=nobody", "--gid=" + group(), "--chdir=" + out, "-w", NODE, typo.toString()));
        assertThat(refused.code()).isNotZero();
        assertThat(refused.out()).contains("priority=12 is not 0..9");
        Path badClass = Files.writeString(out.resolve("class.sh"), """
                #!/bin/bash
                #BB_LUA strata prefetch path=/datasets/slurm qos=interactive
                true
                """);
        Result wrongClass = slurmResult(List.of("sbatch", "--uid=nobody", "--gid=" + group(), "--chdir=" + out, "-w", NODE,
                badClass.toString()));
        assertThat(wrongClass.code()).isNotZero();
        assertThat(wrongClass.out()).contains("qos=interactive is not prefetch, background or training-read");

        Path missing = Files.writeString(out.resolve("missing.sh"), """
                #!/bin/bash
                #SBATCH --output=%s/missing-%%j.out
                #BB_LUA strata prefetch path=/datasets/no-such-dir
                true
                """.formatted(out));
        String job = sbatch(missing);
        // scontrol shows the reason with its spaces as underscores
        String reason = Eventually.value("job " + job + " is held", T, () -> {
            String show = slurm("scontrol", "show", "job", "-o", job).replace('_', ' ');
            return show.contains("Reason=burst buffer/lua: slurm bb data in") ? show : null;
        });
        assertThat(reason).contains("strata: paths[0]: \"/datasets/no-such-dir\"").contains("HTTP 400 from POST /v1/hints");
        assertThat(jobState(job)).isEqualTo("PENDING");
        slurm("scancel", job);
    }

    /**
     * The other way in, for sites without the lua plugin: PrologSlurmctld and EpilogSlurmctld.
     * Added to this Slurm last (slurm.conf edited, then {@code scontrol reconfigure}); the job
     * carries its directive in its comment, which the lua plugin does not read, so only the
     * prolog hints it.
     */
    @Test
    @Order(3)
    void theControllerPrologStagesAJobsCommentDirectiveBeforeItStartsAndTheEpilogEndsIt() throws Exception {
        assertThat(CliTest.strata("mkdir", "-p", "/datasets/prolog", d).code()).isZero();
        Random random = new Random(11);
        for (int i = 0; i < 2; i++) {
            byte[] bytes = new byte[FILE_SIZE];
            random.nextBytes(bytes);
            Path src = Files.write(slurm.resolve("prolog-part-" + i), bytes);
            CliTest.Run put = CliTest.strata("put", src.toString(), "/datasets/prolog/", d);
            assertThat(put.code()).as(put.err()).isZero();
        }
        for (String name : List.of("prolog.sh", "epilog.sh")) {
            Path to = Files.copy(Path.of("..", "scheduler-hooks", "slurm", name).toAbsolutePath().normalize(), conf.resolve(name),
                    java.nio.file.StandardCopyOption.REPLACE_EXISTING);
            Files.setPosixFilePermissions(to, PosixFilePermissions.fromString("rwxr-xr-x"));
        }
        Path slurmConf = conf.resolve("slurm.conf");
        // the prolog's scontrol needs slurm.conf, and PrologSlurmctld does not inherit slurmctld's environment
        Files.writeString(conf.resolve("strata-bb.conf"), "SLURM_CONF=" + slurmConf + "\n", java.nio.file.StandardOpenOption.APPEND);
        Files.writeString(slurmConf, "PrologSlurmctld=" + conf.resolve("prolog.sh") + "\nEpilogSlurmctld=" + conf.resolve("epilog.sh")
                + "\n", java.nio.file.StandardOpenOption.APPEND);
        // scontrol reconfigure shows the new settings but (Slurm 22.05) runs no prolog: slurmctld starts again
        Process ctld = daemons.get(1);
        ctld.destroy();
        assertThat(ctld.waitFor(30, TimeUnit.SECONDS)).as("slurmctld stops").isTrue();
        daemons.set(1, start(slurm.resolve("log").resolve("slurmctld-2.out"), which("slurmctld").orElseThrow(), "-D", "-f",
                slurmConf.toString()));
        Eventually.await("slurmctld runs the prolog", T, () -> slurm("scontrol", "show", "config").contains(conf.resolve("prolog.sh").toString()));
        Eventually.await("the Slurm node " + NODE + " is idle again", T, () -> slurm("sinfo", "-h", "-n", NODE, "-o", "%T").strip().equals("idle"));

        Path script = Files.writeString(out.resolve("prolog-job.sh"), """
                #!/bin/bash
                #SBATCH --output=%1$s/prolog-%%j.out
                date +%%s.%%N > %1$s/start-$SLURM_JOB_ID
                curl -sS --cacert %2$s -H "Authorization: Bearer $(cat %1$s/job.token)" \\
                  "https://%3$s/v1/hints?job=$SLURM_JOB_ID" > %1$s/hints-$SLURM_JOB_ID.json
                """.formatted(out, ca, hooks));
        Result submitted = slurmResult(List.of("sbatch", "--parsable", "--uid=nobody", "--gid=" + group(), "--chdir=" + out, "-w", NODE,
                "--comment=strata prefetch path=" + mnt + "/datasets/prolog deadline=5m", script.toString()));
        assertThat(submitted.code()).as(submitted.out()).isZero();
        String job = submitted.out().strip().split(";")[0];
        Eventually.await("job " + job + " completes", Duration.ofSeconds(120), () -> {
            String st = jobState(job);
            return st.equals("COMPLETED") || st.equals("FAILED") || st.equals("CANCELLED");
        });
        String log = Files.exists(out.resolve("prolog-" + job + ".out")) ? Files.readString(out.resolve("prolog-" + job + ".out")) : "";
        assertThat(jobState(job)).as("job output: " + log + "\nslurmctld log: " + tail(slurm.resolve("log").resolve("slurmctld.log")))
                .isEqualTo("COMPLETED");

        BigDecimal startedAt = new BigDecimal(Files.readString(out.resolve("start-" + job)).strip());
        Instant started = Instant.ofEpochSecond(startedAt.longValue(), startedAt.remainder(BigDecimal.ONE).movePointRight(9).longValue());
        String seen = Files.readString(out.resolve("hints-" + job + ".json"));
        JsonNode hints = JSON.readTree(seen).path("hints");
        assertThat(hints).as("the job's hints at its start (the prolog's): %s; slurmctld: %s", seen, prologLog()).hasSize(1);
        JsonNode hint = hints.get(0);
        assertThat(hint.path("state").asText()).isEqualTo("ready");
        assertThat(hint.path("paths").get(0).asText()).as("the mount's path, mapped").isEqualTo("/datasets/prolog");
        assertThat(hint.path("nodes").get(0).asText()).as("the job's node").isEqualTo(NODE);
        assertThat(hint.path("files").asLong()).isEqualTo(2);
        assertThat(Instant.parse(hint.path("ready_at").asText())).as("ready before the job started").isBeforeOrEqualTo(started);
        String id = hint.path("id").asText();
        Eventually.await("the epilog ends hint " + id, T, () -> get("/v1/hints/" + id).statusCode() == 404);
        assertThat(JSON.readTree(get("/v1/hints?job=" + job).body()).path("hints")).isEmpty();
    }

    // -- Slurm --------------------------------------------------------------------------------

    private static String sbatch(Path script) {
        Result r = slurmResult(List.of("sbatch", "--parsable", "--uid=nobody", "--gid=" + group(), "--chdir=" + out, "-w", NODE,
                script.toString()));
        assertThat(r.code()).as(r.out()).isZero();
        return r.out().strip().split(";")[0];
    }

    private static String group() {
        return run(List.of("id", "-gn", "nobody")).strip();
    }

    private static String jobState(String job) {
        String show = slurm("scontrol", "show", "job", "-o", job);
        int i = show.indexOf("JobState=");
        return i < 0 ? "" : show.substring(i + 9).split("\\s", 2)[0];
    }

    /** slurmctld's lines about the prolog and epilog, for a failure's message. */
    private static String prologLog() {
        try (Stream<String> lines = Files.lines(slurm.resolve("log").resolve("slurmctld.log"))) {
            return String.join("\n", lines.filter(l -> l.contains("prolog") || l.contains("epilog") || l.contains("Prolog")).toList());
        } catch (IOException e) {
            return e.toString();
        }
    }

    /** Slurm's lines about the lua script, for a failure's message. */
    private static String strataLog() {
        try (Stream<String> lines = Files.lines(slurm.resolve("log").resolve("slurmctld.log"))) {
            return String.join("\n", lines.filter(l -> l.contains("strata") || l.contains("burst_buffer")).toList());
        } catch (IOException e) {
            return e.toString();
        }
    }

    private static String slurm(String... args) {
        return slurmResult(List.of(args)).out();
    }

    private static Result slurmResult(List<String> args) {
        return exec(args, Map.of("SLURM_CONF", conf.resolve("slurm.conf").toString()));
    }

    // -- processes and files ------------------------------------------------------------------

    record Result(int code, String out) {
    }

    private static Result exec(List<String> args, Map<String, String> env) {
        try {
            List<String> cmd = new ArrayList<>(args);
            cmd.set(0, which(args.get(0)).orElse(args.get(0)));
            ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true);
            pb.environment().putAll(env);
            Process p = pb.start();
            String s = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            if (!p.waitFor(30, TimeUnit.SECONDS)) {
                p.destroyForcibly();
            }
            return new Result(p.exitValue(), s);
        } catch (IOException e) {
            return new Result(-1, e.toString());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return new Result(-1, e.toString());
        }
    }

    private static String run(List<String> args) {
        return exec(args, Map.of()).out();
    }

    private static Process start(Path log, String... cmd) throws IOException {
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile());
        if (conf != null) {
            pb.environment().put("SLURM_CONF", conf.resolve("slurm.conf").toString());
        }
        return pb.start();
    }

    /** A program on the PATH or in the sbin directories (where Debian puts the daemons). */
    private static Optional<String> which(String name) {
        List<String> dirs = new ArrayList<>(List.of(System.getenv().getOrDefault("PATH", "").split(":")));
        dirs.addAll(List.of("/usr/local/sbin", "/usr/sbin", "/sbin"));
        return dirs.stream().filter(s -> !s.isEmpty()).map(s -> Path.of(s, name)).filter(Files::isExecutable).map(Path::toString).findFirst();
    }

    private static boolean luaPluginInstalled() throws IOException {
        for (String root : List.of("/usr/lib", "/usr/lib64", "/usr/local/lib")) {
            if (Files.isDirectory(Path.of(root))) {
                try (Stream<Path> s = Files.find(Path.of(root), 3, (p, a) -> p.getFileName().toString().equals("burst_buffer_lua.so"))) {
                    if (s.findAny().isPresent()) {
                        return true;
                    }
                }
            }
        }
        return false;
    }

    private static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }

    private static Properties properties(Path f) throws IOException {
        Properties p = new Properties();
        try (Reader r = Files.newBufferedReader(f)) {
            p.load(r);
        }
        return p;
    }

    // -- Strata -------------------------------------------------------------------------------

    private static HttpResponse<String> get(String path) {
        try {
            return hooksHttp.send(HttpRequest.newBuilder(URI.create("https://" + hooks + path)).timeout(Duration.ofSeconds(10))
                            .header("Authorization", "Bearer " + schedulerToken).build(),
                    HttpResponse.BodyHandlers.ofString());
        } catch (IOException e) {
            throw new IllegalStateException("GET " + path + ": " + e, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    /** The mount daemon's {@code strata.l2.client.cached.hit} counter, from its Prometheus endpoint. */
    private static double cachedHits() throws IOException, InterruptedException {
        String metrics = properties(data.resolve("mount").resolve(DaemonRuntime.READY_FILE)).getProperty("metrics");
        String body = HTTP.send(HttpRequest.newBuilder(URI.create("http://" + metrics + "/metrics")).build(),
                HttpResponse.BodyHandlers.ofString()).body();
        return body.lines().filter(l -> l.startsWith("strata_l2_client_cached_hit_total"))
                .mapToDouble(l -> Double.parseDouble(l.substring(l.lastIndexOf(' ') + 1))).sum();
    }
}
