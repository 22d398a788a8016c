package io.strata.fuse;

import io.strata.client.Checkpoints;
import io.strata.client.StrataFileSystem;
import io.strata.core.Status;
import io.strata.core.StrataException;
import io.strata.protocol.meta.Checkpoint;
import io.strata.protocol.meta.Checkpoint.Generation;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Checkpoint generations through the mount, for any language and no client library
 * (docs/checkpoints.md, "Through the mount"). Virtual attributes, read or set by name, never
 * listed:
 * <ul>
 *   <li>{@code user.strata.ckpt.commit} (set, on a generation): commit it; the value is the level
 *       ({@code l2} or {@code l3}) on its first line, then optionally one expected file per line,
 *       {@code path<TAB>size}. Returns once the level is reached.</li>
 *   <li>{@code user.strata.ckpt.wait} (set, on a committed generation): wait for the level in
 *       the value.</li>
 *   <li>{@code user.strata.ckpt.status} (get, on a generation): {@code key=value} lines.</li>
 *   <li>{@code user.strata.ckpt.error} (get, on a generation): why this mount's last commit or
 *       wait of it failed (errno alone cannot say which file).</li>
 *   <li>{@code user.strata.ckpt.latest} (get, on a root): the newest committed generation's name.</li>
 *   <li>{@code user.strata.ckpt.list} (get, on a root): {@code seq<TAB>name<TAB>durability<TAB>pinned}
 *       per committed generation, oldest first.</li>
 *   <li>{@code user.strata.ckpt.pin} (set, on a committed generation): {@code on} or {@code off}.</li>
 * </ul>
 */
final class CheckpointXattrs {
    static final String PREFIX = "user.strata.ckpt.";
    static final String COMMIT = PREFIX + "commit";
    static final String WAIT = PREFIX + "wait";
    static final String STATUS = PREFIX + "status";
    static final String ERROR = PREFIX + "error";
    static final String LATEST = PREFIX + "latest";
    static final String LIST = PREFIX + "list";
    static final String PIN = PREFIX + "pin";
    /** The longest a commit or wait through the mount blocks. */
    static final Duration WAIT_BOUND = Duration.ofHours(6);
    private static final int ERRORS_KEPT = 1024;

    /** The last failure of a commit or wait, by the path it was asked on. */
    private final Map<String, String> errors = new ConcurrentHashMap<>();

    static boolean handles(String name) {
        return name.startsWith(PREFIX);
    }

    byte[] get(StrataFileSystem fs, String path, String name) {
        Checkpoints c = fs.checkpoints();
        String v = switch (name) {
            case STATUS -> c.status(path).statusText(parentOf(path));
            case ERROR -> {
                String e = errors.get(path);
                if (e == null) {
                    throw new StrataException(Status.NO_SUCH_ATTRIBUTE, "no checkpoint error recorded for " + path + " on this mount");
                }
                yield e + "\n";
            }
            case LATEST -> c.latest(path).map(Generation::name).orElseThrow(() -> new StrataException(Status.NO_SUCH_ATTRIBUTE,
                    "no committed generation in " + path));
            case LIST -> {
                StringBuilder sb = new StringBuilder();
                for (Generation g : c.list(path)) {
                    if (g.committed()) {
                        sb.append(g.seq()).append('\t').append(g.name()).append('\t').append(g.durability().text()).append('\t')
                                .append(g.pinned() ? "yes" : "no").append('\n');
                    }
                }
                yield sb.toString();
            }
            default -> throw new StrataException(Status.NO_SUCH_ATTRIBUTE, name + " cannot be read (see docs/checkpoints.md)");
        };
        return v.getBytes(StandardCharsets.UTF_8);
    }

    void set(StrataFileSystem fs, String path, String name, byte[] value) {
        String v = new String(value, StandardCharsets.UTF_8);
        Checkpoints c = fs.checkpoints();
        try {
            switch (name) {
                case COMMIT -> {
                    List<String> lines = v.lines().map(String::strip).filter(l -> !l.isEmpty()).toList();
                    if (lines.isEmpty()) {
                        throw new StrataException(Status.INVALID_ARGUMENT, "a commit needs a level, l2 or l3");
                    }
                    c.commit(path, level(lines.get(0)), expected(lines.subList(1, lines.size())), Checkpoints.BUSY_WAIT, WAIT_BOUND, null);
                }
                case WAIT -> c.await(path, level(v), WAIT_BOUND, null);
                case PIN -> c.pin(path, switch (v.strip()) {
                    case "on", "1", "yes" -> true;
                    case "off", "0", "no" -> false;
                    default -> throw new StrataException(Status.INVALID_ARGUMENT, PIN + " is on or off, not \"" + v.strip() + "\"");
                });
                default -> throw new StrataException(Status.NOT_PERMITTED, name + " cannot be set (see docs/checkpoints.md)");
            }
            errors.remove(path);
        } catch (StrataException e) {
            if (errors.size() >= ERRORS_KEPT) {
                errors.clear();
            }
            errors.put(path, e.getMessage());
            throw e;
        }
    }

    private static Checkpoint.Level level(String s) {
        try {
            return Checkpoint.Level.parse(s);
        } catch (IllegalArgumentException e) {
            throw new StrataException(Status.INVALID_ARGUMENT, e.getMessage());
        }
    }

    /** {@code path<TAB>size} lines (a size of {@code -} or none: any size). */
    static List<Checkpoint.Expected> expected(List<String> lines) {
        List<Checkpoint.Expected> out = new ArrayList<>();
        for (String l : lines) {
            int tab = l.lastIndexOf('\t');
            String p = tab < 0 ? l : l.substring(0, tab);
            String size = tab < 0 ? "-" : l.substring(tab + 1).strip();
            try {
                out.add(new Checkpoint.Expected(p, size.equals("-") ? -1 : Long.parseLong(size)));
            } catch (IllegalArgumentException e) {
                throw new StrataException(Status.INVALID_ARGUMENT, "bad expected file line \"" + l + "\": " + e.getMessage());
            }
        }
        return out;
    }

    private static String parentOf(String path) {
        int i = path.lastIndexOf('/');
        return i <= 0 ? "/" : path.substring(0, i);
    }
}
