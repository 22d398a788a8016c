package io.strata.hooks;

import com.fasterxml.jackson.databind.JsonNode;
import io.strata.core.Status;
import io.strata.core.StrataException;
import io.strata.core.tier.QosClass;
import java.time.Duration;
import java.time.Instant;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.Iterator;
import java.util.List;
import java.util.Locale;
import java.util.Set;

/**
 * A hint as a scheduler submits it, checked field by field: every error names its field.
 *
 * @param deadline   milliseconds since the epoch; 0 for none
 * @param supersedes a hint this one replaces (cancelled when this one is stored); 0 for none
 */
public record HintSpec(String job, List<String> paths, long deadline, int priority, List<String> nodes, String qos, long supersedes) {
    static final int MAX_PATHS = 1000;
    static final int MAX_NODES = 4096;
    private static final Set<String> FIELDS = Set.of("job", "paths", "deadline", "priority", "nodes", "qos", "supersedes");
    /**
     * The classes a hint may fetch in: a fetch is bulk work ahead of a job, so never
     * {@code interactive} (users' own I/O) or {@code checkpoint} (saves and restores).
     * {@code training-read} is for a job that runs already and reads what is still being fetched.
     */
    static final Set<QosClass> HINT_CLASSES = EnumSet.of(QosClass.PREFETCH, QosClass.BACKGROUND, QosClass.TRAINING_READ);

    public HintSpec {
        paths = List.copyOf(paths);
        nodes = List.copyOf(nodes);
    }

    /**
     * Reads a submission: {@code job} (required), {@code paths} (required, absolute),
     * {@code deadline} (an ISO-8601 instant such as {@code 2026-12-01T20:00:00Z}, or a delay from
     * now such as {@code 90s}, {@code 30m}, {@code 2h}), {@code priority} (0..9, default 0),
     * {@code nodes}, {@code qos} (one of {@link #HINT_CLASSES}, default {@code prefetch}),
     * {@code supersedes} (a hint id).
     */
    public static HintSpec parse(JsonNode n, Instant now) {
        if (n == null || !n.isObject()) {
            throw bad("the body must be a JSON object");
        }
        for (Iterator<String> it = n.fieldNames(); it.hasNext(); ) {
            String f = it.next();
            if (!FIELDS.contains(f)) {
                throw bad(f + ": unknown field (expected one of job, paths, deadline, priority, nodes, qos, supersedes)");
            }
        }
        JsonNode job = n.get("job");
        if (job == null || !job.isTextual() || job.asText().isBlank() || job.asText().length() > 256
                || job.asText().chars().anyMatch(Character::isISOControl)) {
            throw bad("job: required, a name of 1 to 256 printable characters");
        }
        List<String> paths = strings(n, "paths", MAX_PATHS);
        if (paths.isEmpty()) {
            throw bad("paths: required, at least one absolute path");
        }
        for (int i = 0; i < paths.size(); i++) {
            String p = paths.get(i);
            if (!p.startsWith("/") || p.contains("\0") || p.length() > 4096) {
                throw bad("paths[" + i + "]: \"" + p + "\" is not an absolute path");
            }
        }
        long deadline = 0;
        JsonNode d = n.get("deadline");
        if (d != null && !d.isNull()) {
            if (!d.isTextual()) {
                throw bad("deadline: a string, an ISO-8601 instant (2026-12-01T20:00:00Z) or a delay (90s, 30m, 2h)");
            }
            deadline = deadline(d.asText(), now);
            if (deadline <= now.toEpochMilli()) {
                throw bad("deadline: " + d.asText() + " is in the past");
            }
        }
        int priority = 0;
        JsonNode p = n.get("priority");
        if (p != null && !p.isNull()) {
            if (!p.isInt() || p.asInt() < 0 || p.asInt() > 9) {
                throw bad("priority: an integer 0..9 (higher first), got " + p);
            }
            priority = p.asInt();
        }
        List<String> nodes = n.has("nodes") ? strings(n, "nodes", MAX_NODES) : List.of();
        String qos = QosClass.PREFETCH.policyName();
        JsonNode q = n.get("qos");
        if (q != null && !q.isNull()) {
            if (!q.isTextual() || HINT_CLASSES.stream().noneMatch(c -> c.policyName().equals(q.asText()))) {
                throw bad("qos: the class agents fetch the data in: prefetch (the default), background or training-read, got " + q);
            }
            qos = q.asText();
        }
        long supersedes = 0;
        JsonNode s = n.get("supersedes");
        if (s != null && !s.isNull()) {
            try {
                supersedes = s.isIntegralNumber() ? s.asLong() : Long.parseLong(s.asText());
            } catch (NumberFormatException e) {
                supersedes = -1;
            }
            if (supersedes <= 0) {
                throw bad("supersedes: a hint id, got " + s);
            }
        }
        return new HintSpec(job.asText(), paths, deadline, priority, nodes, qos, supersedes);
    }

    /** An ISO-8601 instant, or a delay from {@code now} ({@code 90s}, {@code 30m}, {@code 2h}). */
    static long deadline(String text, Instant now) {
        String t = text.trim().toLowerCase(Locale.ROOT);
        if (t.matches("\\d+[smh]")) {
            long v = Long.parseLong(t.substring(0, t.length() - 1));
            Duration dur = switch (t.charAt(t.length() - 1)) {
                case 's' -> Duration.ofSeconds(v);
                case 'm' -> Duration.ofMinutes(v);
                default -> Duration.ofHours(v);
            };
            return now.plus(dur).toEpochMilli();
        }
        try {
            return Instant.parse(text.trim()).toEpochMilli();
        } catch (DateTimeParseException e) {
            throw bad("deadline: \"" + text + "\" is neither an ISO-8601 instant (2026-12-01T20:00:00Z) nor a delay (90s, 30m, 2h)");
        }
    }

    private static List<String> strings(JsonNode n, String field, int max) {
        JsonNode a = n.get(field);
        if (a == null || a.isNull()) {
            return List.of();
        }
        if (!a.isArray()) {
            throw bad(field + ": a JSON array of strings");
        }
        if (a.size() > max) {
            throw bad(field + ": at most " + max + " entries, got " + a.size());
        }
        List<String> out = new ArrayList<>();
        for (int i = 0; i < a.size(); i++) {
            if (!a.get(i).isTextual() || a.get(i).asText().isBlank()) {
                throw bad(field + "[" + i + "]: a non-empty string");
            }
            out.add(a.get(i).asText());
        }
        return out;
    }

    private static StrataException bad(String message) {
        return new StrataException(Status.INVALID_ARGUMENT, message);
    }
}
