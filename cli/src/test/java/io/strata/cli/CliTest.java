package io.strata.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/** The command line as a user meets it: help, version, and how mistakes are reported. */
class CliTest {
    record Run(int code, String out, String err) {
    }

    static Run strata(String... args) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int code = StrataMain.run(args, new PrintStream(out, true, StandardCharsets.UTF_8), new PrintStream(err, true, StandardCharsets.UTF_8));
        return new Run(code, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
    }

    @Test
    void helpListsTheCommands() {
        Run r = strata("--help");
        assertThat(r.code()).isZero();
        assertThat(r.out()).contains("Usage: strata").contains("up").contains("down").contains("bench").contains("ping");
    }

    @Test
    void versionNamesTheBuildTheJvmAndTheTransports() {
        Run r = strata("version");
        assertThat(r.code()).isZero();
        assertThat(r.out()).contains("strata ").contains("java " + Runtime.version().feature()).contains("transports: nio");
    }

    @Test
    void usageMistakesAreOneLineAndExitTwo() {
        Run r = strata("frobnicate");
        assertThat(r.code()).isEqualTo(2);
        assertThat(r.err()).startsWith("strata: ").contains("frobnicate").contains("--help").doesNotContain("at io.");
        assertThat(strata("ping").code()).isEqualTo(2);
    }

    @Test
    void operationalErrorsAreOneLineWithoutAStackTraceUnlessVerbose() {
        Run r = strata("ping", "127.0.0.1:1", "--count", "1", "--timeout", "2s");
        assertThat(r.code()).isEqualTo(1);
        assertThat(r.err().strip()).startsWith("strata: cannot connect to 127.0.0.1:1").doesNotContain("\n");
        Run v = strata("--verbose", "ping", "127.0.0.1:1", "--count", "1");
        assertThat(v.code()).isEqualTo(1);
        assertThat(v.err()).contains("\tat ");
        Run bad = strata("ping", "no-port-here");
        assertThat(bad.code()).isEqualTo(1);
        assertThat(bad.err().strip()).isEqualTo("strata: expected host:port, got \"no-port-here\"");
    }

    @Test
    void aBadConfigFileIsAClearErrorAtStart(@org.junit.jupiter.api.io.TempDir java.nio.file.Path dir) throws Exception {
        java.nio.file.Path cfg = dir.resolve("node.toml");
        java.nio.file.Files.writeString(cfg, "[rpc]\nmax-in-flight = -4\n");
        Run r = strata("node", "--config", cfg.toString());
        assertThat(r.code()).isEqualTo(1);
        assertThat(r.err().strip()).isEqualTo("strata: rpc.max-in-flight: must be between 1 and 1048576, got -4");
        java.nio.file.Files.writeString(cfg, "[nodes]\nname = \"x\"\n");
        assertThat(strata("node", "--config", cfg.toString()).err()).contains("nodes: unknown key (did you mean node?)");
    }
}
