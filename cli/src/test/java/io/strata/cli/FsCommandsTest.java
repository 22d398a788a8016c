package io.strata.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.strata.harness.LocalCluster;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The native file commands and {@code policy} as a user meets their errors: storage nodes and
 * the meta service in this JVM, found as a local cluster through {@code --data} (a data directory
 * holding the client config, as {@code strata up} leaves it). Every error about a path names the
 * path as typed, in the words of ls, cp or mkdir, and exits 1.
 */
class FsCommandsTest {
    @TempDir
    static Path tmp;

    private static LocalCluster cluster;
    private static String data;

    @BeforeAll
    static void start() throws Exception {
        cluster = LocalCluster.builder(tmp.resolve("cluster"), 11).storageNodes(3).chains(3).metaSync(false).metaInProcess().start();
        Path dir = Files.createDirectories(tmp.resolve("data"));
        Files.writeString(dir.resolve(ClientSource.CLIENT_TOML), cluster.clientToml("io-timeout = \"10s\""));
        data = "--data=" + dir;
        assertThat(strata("mkdir", "-p", "/ds/sub").code()).isZero();
        Path f = Files.writeString(tmp.resolve("f.txt"), "hello");
        CliTest.Run put = strata("put", f.toString(), "/ds/f.txt");
        assertThat(put.code()).as(put.err()).isZero();
    }

    @AfterAll
    static void stop() {
        if (cluster != null) {
            cluster.close();
        }
    }

    private static CliTest.Run strata(String... args) {
        String[] all = java.util.Arrays.copyOf(args, args.length + 1);
        all[args.length] = data;
        return CliTest.strata(all);
    }

    /** The one line on stderr, checked to be the whole of it with exit 1. */
    private static String error(String... args) {
        CliTest.Run r = strata(args);
        assertThat(r.code()).as(String.join(" ", args) + ": " + r.err()).isEqualTo(1);
        assertThat(r.err()).endsWith("\n").doesNotContain("inode-").doesNotContain("Exception");
        assertThat(r.err().strip()).doesNotContain("\n");
        return r.err().strip();
    }

    @Test
    void aMissingPathIsNamedAsTyped() {
        assertThat(error("stat", "/nonexistent")).isEqualTo("strata: /nonexistent: no such file or directory");
        assertThat(error("ls", "/nope/deeper")).isEqualTo("strata: /nope/deeper: no such file or directory");
        assertThat(error("cat", "/ds/nope.txt")).isEqualTo("strata: /ds/nope.txt: no such file or directory");
        assertThat(error("rm", "strata:/ds/nope")).isEqualTo("strata: /ds/nope: no such file or directory");
        assertThat(error("mkdir", "/nope/x")).isEqualTo("strata: /nope/x: no such file or directory");
        assertThat(error("cp", "strata:/ds/nope", tmp.resolve("out").toString())).isEqualTo("strata: strata:/ds/nope: no such file or directory");
        assertThat(error("cp", tmp.resolve("f.txt").toString(), "strata:/nope/f.txt"))
                .isEqualTo("strata: strata:/nope/f.txt: no such file or directory");
        assertThat(error("policy", "get", "/nonexistent")).isEqualTo("strata: /nonexistent: no such file or directory");
    }

    @Test
    void otherPathErrorsReadAsInLsAndMkdir() {
        assertThat(error("mkdir", "/ds")).isEqualTo("strata: /ds: file exists");
        assertThat(error("ls", "/ds/f.txt/x")).isEqualTo("strata: /ds/f.txt/x: not a directory");
        assertThat(error("rm", "/ds/sub")).isEqualTo("strata: /ds/sub: is a directory (use rm -r)");
        assertThat(error("policy", "set", "/ds/f.txt", "replicas=2")).isEqualTo("strata: /ds/f.txt: not a directory");
    }

    @Test
    void aMissingLocalFileIsNamedToo() {
        Path missing = tmp.resolve("missing.bin");
        assertThat(error("put", missing.toString(), "/ds/")).isEqualTo("strata: " + missing + ": no such file or directory");
        Path noDir = tmp.resolve("no/such/dir/out");
        assertThat(error("cp", "strata:/ds/f.txt", noDir.toString())).isEqualTo("strata: " + noDir + ": no such file or directory");
    }

    @Test
    void verboseShowsTheNamespacesOwnWordsBelow() {
        CliTest.Run r = strata("--verbose", "stat", "/nonexistent");
        assertThat(r.code()).isEqualTo(1);
        assertThat(r.err()).startsWith("strata: /nonexistent: no such file or directory\n").contains("no entry \"nonexistent\"");
    }

    @Test
    void policyFindsTheLocalClusterWithoutMeta() {
        CliTest.Run get = strata("policy", "get", "/ds");
        assertThat(get.code()).as(get.err()).isZero();
        assertThat(get.out()).contains("policy of /ds").containsPattern("replicas +\\|");
        CliTest.Run file = strata("policy", "explain", "/ds/f.txt");
        assertThat(file.out()).contains("/ds/f.txt is a file");
    }
}
