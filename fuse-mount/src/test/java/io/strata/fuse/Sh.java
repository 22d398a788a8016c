package io.strata.fuse;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/** Runs the tools a user would (cp, tar, dd, sha256sum, git) and compares trees by checksum. */
final class Sh {
    record Result(int code, String out) {
        Result ok() {
            if (code != 0) {
                throw new AssertionError("exit " + code + ": " + out);
            }
            return this;
        }
    }

    private Sh() {
    }

    static Result run(Path cwd, String... cmd) {
        return run(cwd, 300, cmd);
    }

    static Result run(Path cwd, int timeoutSeconds, String... cmd) {
        try {
            Process p = new ProcessBuilder(cmd).directory(cwd.toFile()).redirectErrorStream(true).start();
            p.getOutputStream().close();
            byte[] out = p.getInputStream().readAllBytes();
            if (!p.waitFor(timeoutSeconds, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                throw new AssertionError(String.join(" ", cmd) + " did not finish in " + timeoutSeconds + " s");
            }
            return new Result(p.exitValue(), new String(out, StandardCharsets.UTF_8));
        } catch (IOException e) {
            throw new AssertionError("cannot run " + String.join(" ", cmd) + ": " + e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError("interrupted");
        }
    }

    static Result sh(Path cwd, String script) {
        return run(cwd, "bash", "-c", script);
    }

    /** A file of {@code size} pseudo-random bytes from {@code seed}, written fast. */
    static void randomFile(Path f, long size, long seed) throws IOException {
        SplittableRandom r = new SplittableRandom(seed);
        byte[] buf = new byte[1 << 20];
        try (var out = Files.newOutputStream(f)) {
            for (long left = size; left > 0; ) {
                for (int i = 0; i < buf.length; i += 8) {
                    long v = r.nextLong();
                    for (int k = 0; k < 8; k++) {
                        buf[i + k] = (byte) (v >>> (8 * k));
                    }
                }
                int n = (int) Math.min(left, buf.length);
                out.write(buf, 0, n);
                left -= n;
            }
        }
    }

    static String sha256(Path f) {
        try (var in = Files.newInputStream(f)) {
            MessageDigest d = MessageDigest.getInstance("SHA-256");
            byte[] buf = new byte[1 << 20];
            for (int n; (n = in.read(buf)) > 0; ) {
                d.update(buf, 0, n);
            }
            return HexFormat.of().formatHex(d.digest());
        } catch (Exception e) {
            throw new AssertionError("cannot checksum " + f + ": " + e, e);
        }
    }

    /** relative path -> sha256 of every regular file under {@code root} (and "dir" for directories). */
    static java.util.TreeMap<String, String> tree(Path root) throws IOException {
        java.util.TreeMap<String, String> out = new java.util.TreeMap<>();
        try (Stream<Path> s = Files.walk(root)) {
            List<Path> all = new ArrayList<>(s.toList());
            for (Path p : all) {
                String rel = root.relativize(p).toString();
                if (rel.isEmpty()) {
                    continue;
                }
                if (Files.isSymbolicLink(p)) {
                    out.put(rel, "-> " + Files.readSymbolicLink(p));
                } else if (Files.isDirectory(p)) {
                    out.put(rel, "dir");
                } else {
                    out.put(rel, Files.size(p) + ":" + sha256(p));
                }
            }
        }
        return out;
    }
}
