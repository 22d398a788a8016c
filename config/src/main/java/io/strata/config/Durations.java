package io.strata.config;

import java.time.Duration;
import java.time.format.DateTimeParseException;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** Parses durations as operators write them: {@code 250ms}, {@code 30s}, {@code 5m}, {@code 2h}, {@code 7d}, or ISO-8601. */
public final class Durations {
    private static final Pattern SIMPLE = Pattern.compile("\\s*(\\d+)\\s*(ms|s|m|h|d)\\s*");

    private Durations() {
    }

    public static Duration parse(String text) {
        if (text == null) {
            throw new IllegalArgumentException("a duration is required");
        }
        Matcher m = SIMPLE.matcher(text.toLowerCase(Locale.ROOT));
        if (m.matches()) {
            long n = Long.parseLong(m.group(1));
            return switch (m.group(2)) {
                case "ms" -> Duration.ofMillis(n);
                case "s" -> Duration.ofSeconds(n);
                case "m" -> Duration.ofMinutes(n);
                case "h" -> Duration.ofHours(n);
                default -> Duration.ofDays(n);
            };
        }
        try {
            return Duration.parse(text.trim());
        } catch (DateTimeParseException e) {
            throw new IllegalArgumentException("not a duration: '" + text + "' (expected e.g. 250ms, 30s, 5m, 2h, 7d)");
        }
    }

    /** The shortest exact spelling: 90s prints as "90s", 2h as "2h". */
    public static String format(Duration d) {
        long ms = d.toMillis();
        if (ms % 86_400_000 == 0 && ms != 0) {
            return ms / 86_400_000 + "d";
        }
        if (ms % 3_600_000 == 0 && ms != 0) {
            return ms / 3_600_000 + "h";
        }
        if (ms % 60_000 == 0 && ms != 0) {
            return ms / 60_000 + "m";
        }
        if (ms % 1000 == 0) {
            return ms / 1000 + "s";
        }
        return ms + "ms";
    }
}
