package io.strata.core;

import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A number of bytes. Parses and prints binary units ({@code 64KiB}, {@code 4 MiB}, {@code 1GiB});
 * {@code K/M/G/T} and {@code KB/MB/...} are read as binary units too, as storage tools usually mean.
 */
public record DataSize(long bytes) implements Comparable<DataSize> {
    public static final DataSize ZERO = new DataSize(0);
    private static final Pattern FORMAT =
            Pattern.compile("\\s*(\\d+)(?:\\.(\\d+))?\\s*([a-zA-Z]*)\\s*");

    public DataSize {
        if (bytes < 0) {
            throw new IllegalArgumentException("a size cannot be negative: " + bytes);
        }
    }

    public static DataSize ofBytes(long bytes) {
        return new DataSize(bytes);
    }

    public static DataSize ofKiB(long n) {
        return new DataSize(Math.multiplyExact(n, 1L << 10));
    }

    public static DataSize ofMiB(long n) {
        return new DataSize(Math.multiplyExact(n, 1L << 20));
    }

    public static DataSize ofGiB(long n) {
        return new DataSize(Math.multiplyExact(n, 1L << 30));
    }

    /** Parses "4MiB", "64 KiB", "1.5GiB", "4096", "4M". */
    public static DataSize parse(String text) {
        if (text == null) {
            throw new IllegalArgumentException("a size is required");
        }
        Matcher m = FORMAT.matcher(text);
        if (!m.matches()) {
            throw new IllegalArgumentException("not a size: '" + text + "' (expected e.g. 64KiB, 4MiB, 1GiB)");
        }
        long shift = switch (m.group(3).toLowerCase(Locale.ROOT)) {
            case "", "b" -> 0;
            case "k", "kb", "kib" -> 10;
            case "m", "mb", "mib" -> 20;
            case "g", "gb", "gib" -> 30;
            case "t", "tb", "tib" -> 40;
            case "p", "pb", "pib" -> 50;
            default -> throw new IllegalArgumentException(
                    "unknown size unit '" + m.group(3) + "' in '" + text + "' (use B, KiB, MiB, GiB, TiB)");
        };
        try {
            long whole = Math.multiplyExact(Long.parseLong(m.group(1)), 1L << shift);
            long frac = 0;
            if (m.group(2) != null) {
                double f = Double.parseDouble("0." + m.group(2));
                frac = Math.round(f * (1L << shift));
            }
            return new DataSize(Math.addExact(whole, frac));
        } catch (ArithmeticException | NumberFormatException e) {
            throw new IllegalArgumentException("size out of range: '" + text + "'");
        }
    }

    public int toIntExact() {
        return Math.toIntExact(bytes);
    }

    public boolean isPowerOfTwo() {
        return bytes > 0 && Long.bitCount(bytes) == 1;
    }

    @Override
    public int compareTo(DataSize o) {
        return Long.compare(bytes, o.bytes);
    }

    /** The largest exact binary unit: 65536 prints as "64KiB", 1000 as "1000B". */
    @Override
    public String toString() {
        String[] units = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
        long v = bytes;
        int u = 0;
        while (u < units.length - 1 && v != 0 && v % 1024 == 0) {
            v /= 1024;
            u++;
        }
        return v + units[u];
    }

    /** A human figure with one decimal (for tables): 1536 -> "1.5KiB". */
    public static String human(long bytes) {
        String[] units = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
        double v = bytes;
        int u = 0;
        while (u < units.length - 1 && Math.abs(v) >= 1024) {
            v /= 1024;
            u++;
        }
        return u == 0 ? bytes + "B" : String.format(Locale.ROOT, "%.1f%s", v, units[u]);
    }
}
