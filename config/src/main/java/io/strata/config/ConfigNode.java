package io.strata.config;

import com.fasterxml.jackson.core.JacksonException;
import com.fasterxml.jackson.core.JsonLocation;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.dataformat.toml.TomlMapper;
import io.strata.core.rpc.Addresses;
import io.strata.core.DataSize;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.Set;

/**
 * A table of a TOML configuration file, read with the full key path in view. Every getter
 * validates and, on a bad value, throws a {@link ConfigException} naming the key path and the
 * value; a key nobody read is an error too ({@link #rejectUnknownKeys()}): a typo never passes
 * as a default.
 *
 * <pre>{@code
 * ConfigNode root = ConfigNode.load(Path.of("storage.toml"));
 * Duration lease = root.section("cluster").duration("lease", Duration.ofSeconds(10));
 * root.rejectUnknownKeys();
 * }</pre>
 */
public final class ConfigNode {
    private static final TomlMapper TOML = new TomlMapper();

    private final String path;
    private final ObjectNode node;
    private final Set<String> read = new LinkedHashSet<>();
    private final List<ConfigNode> children = new ArrayList<>();

    private ConfigNode(String path, ObjectNode node) {
        this.path = path;
        this.node = node;
    }

    /** An empty configuration: every getter returns its default. */
    public static ConfigNode empty() {
        return new ConfigNode("", JsonNodeFactory.instance.objectNode());
    }

    public static ConfigNode load(Path file) {
        String text;
        try {
            text = Files.readString(file);
        } catch (NoSuchFileException e) {
            throw new ConfigException("", "config file " + file + " does not exist");
        } catch (IOException e) {
            throw new ConfigException("", "cannot read config file " + file + ": " + e.getMessage());
        }
        return parse(text, file.toString());
    }

    /** Parses TOML text; {@code source} names it in errors (a file name). */
    public static ConfigNode parse(String toml, String source) {
        try {
            JsonNode tree = TOML.readTree(toml);
            if (tree == null || tree.isMissingNode()) {
                return empty();
            }
            return new ConfigNode("", (ObjectNode) tree);
        } catch (JacksonException e) {
            JsonLocation loc = e.getLocation();
            String where = loc == null ? "" : " at line " + loc.getLineNr() + ", column " + loc.getColumnNr();
            throw new ConfigException("", source + " is not valid TOML" + where + ": " + e.getOriginalMessage());
        } catch (IOException e) {
            throw new ConfigException("", "cannot parse " + source + ": " + e.getMessage());
        }
    }

    /** The dotted path of this table ("" for the root). */
    public String path() {
        return path;
    }

    private String key(String k) {
        return path.isEmpty() ? k : path + "." + k;
    }

    private JsonNode get(String k) {
        read.add(k);
        JsonNode v = node.get(k);
        return v == null || v.isNull() ? null : v;
    }

    public boolean has(String k) {
        return node.has(k);
    }

    /** A sub-table; an absent one reads as empty (all defaults). */
    public ConfigNode section(String k) {
        JsonNode v = get(k);
        if (v != null && !v.isObject()) {
            throw new ConfigException(key(k), "expected a table, got " + describe(v));
        }
        ConfigNode child = new ConfigNode(key(k), v == null ? JsonNodeFactory.instance.objectNode() : (ObjectNode) v);
        children.add(child);
        return child;
    }

    /** An array of tables ({@code [[targets]]}); absent reads as empty. */
    public List<ConfigNode> sections(String k) {
        JsonNode v = get(k);
        List<ConfigNode> out = new ArrayList<>();
        if (v == null) {
            return out;
        }
        if (!v.isArray()) {
            throw new ConfigException(key(k), "expected an array of tables, got " + describe(v));
        }
        for (int i = 0; i < v.size(); i++) {
            JsonNode e = v.get(i);
            if (!e.isObject()) {
                throw new ConfigException(key(k) + "[" + i + "]", "expected a table, got " + describe(e));
            }
            ConfigNode child = new ConfigNode(key(k) + "[" + i + "]", (ObjectNode) e);
            children.add(child);
            out.add(child);
        }
        return out;
    }

    public String string(String k, String def) {
        JsonNode v = get(k);
        if (v == null) {
            return def;
        }
        if (!v.isTextual()) {
            throw new ConfigException(key(k), "expected a string, got " + describe(v));
        }
        return v.asText();
    }

    /** A string that must be present. */
    public String requireString(String k) {
        String s = string(k, null);
        if (s == null) {
            throw new ConfigException(key(k), "is required");
        }
        return s;
    }

    public long integer(String k, long def, long min, long max) {
        JsonNode v = get(k);
        if (v == null) {
            return def;
        }
        if (!v.isIntegralNumber()) {
            throw new ConfigException(key(k), "expected an integer, got " + describe(v));
        }
        long n = v.asLong();
        if (n < min || n > max) {
            throw new ConfigException(key(k), "must be between " + min + " and " + max + ", got " + n);
        }
        return n;
    }

    public int integer(String k, int def, int min, int max) {
        return (int) integer(k, (long) def, min, max);
    }

    public boolean bool(String k, boolean def) {
        JsonNode v = get(k);
        if (v == null) {
            return def;
        }
        if (!v.isBoolean()) {
            throw new ConfigException(key(k), "expected true or false, got " + describe(v));
        }
        return v.asBoolean();
    }

    /** A size: a string with a unit ("64MiB") or an integer number of bytes. */
    public DataSize size(String k, DataSize def, DataSize min, DataSize max) {
        JsonNode v = get(k);
        if (v == null) {
            return def;
        }
        DataSize s;
        if (v.isIntegralNumber()) {
            if (v.asLong() < 0) {
                throw new ConfigException(key(k), "a size cannot be negative, got " + v.asLong());
            }
            s = DataSize.ofBytes(v.asLong());
        } else if (v.isTextual()) {
            try {
                s = DataSize.parse(v.asText());
            } catch (IllegalArgumentException e) {
                throw new ConfigException(key(k), e.getMessage());
            }
        } else {
            throw new ConfigException(key(k), "expected a size like \"64MiB\", got " + describe(v));
        }
        if (s.compareTo(min) < 0 || s.compareTo(max) > 0) {
            throw new ConfigException(key(k), "must be between " + min + " and " + max + ", got " + s);
        }
        return s;
    }

    /** A duration written with a unit: "250ms", "30s", "5m". */
    public Duration duration(String k, Duration def, Duration min, Duration max) {
        JsonNode v = get(k);
        if (v == null) {
            return def;
        }
        if (!v.isTextual()) {
            throw new ConfigException(key(k), "expected a duration with a unit like \"30s\", got " + describe(v));
        }
        Duration d;
        try {
            d = Durations.parse(v.asText());
        } catch (IllegalArgumentException e) {
            throw new ConfigException(key(k), e.getMessage());
        }
        if (d.compareTo(min) < 0 || d.compareTo(max) > 0) {
            throw new ConfigException(key(k), "must be between " + Durations.format(min) + " and "
                    + Durations.format(max) + ", got " + Durations.format(d));
        }
        return d;
    }

    public <E extends Enum<E>> E choice(String k, E def, Class<E> type) {
        String s = string(k, null);
        if (s == null) {
            return def;
        }
        String norm = s.toUpperCase(Locale.ROOT).replace('-', '_');
        for (E e : type.getEnumConstants()) {
            if (e.name().equals(norm)) {
                return e;
            }
        }
        List<String> names = new ArrayList<>();
        for (E e : type.getEnumConstants()) {
            names.add(e.name().toLowerCase(Locale.ROOT).replace('_', '-'));
        }
        throw new ConfigException(key(k), "unknown value \"" + s + "\" (expected one of " + String.join(", ", names) + ")");
    }

    public List<String> strings(String k, List<String> def) {
        JsonNode v = get(k);
        if (v == null) {
            return def;
        }
        if (!v.isArray()) {
            throw new ConfigException(key(k), "expected an array of strings, got " + describe(v));
        }
        List<String> out = new ArrayList<>();
        for (int i = 0; i < v.size(); i++) {
            if (!v.get(i).isTextual()) {
                throw new ConfigException(key(k) + "[" + i + "]", "expected a string, got " + describe(v.get(i)));
            }
            out.add(v.get(i).asText());
        }
        return out;
    }

    /** An array of integers, each checked against [min, max]. */
    public List<Long> longs(String k, List<Long> def, long min, long max) {
        JsonNode v = get(k);
        if (v == null) {
            return def;
        }
        if (!v.isArray()) {
            throw new ConfigException(key(k), "expected an array of integers, got " + describe(v));
        }
        List<Long> out = new ArrayList<>();
        for (int i = 0; i < v.size(); i++) {
            JsonNode e = v.get(i);
            if (!e.isIntegralNumber()) {
                throw new ConfigException(key(k) + "[" + i + "]", "expected an integer, got " + describe(e));
            }
            if (e.asLong() < min || e.asLong() > max) {
                throw new ConfigException(key(k) + "[" + i + "]", "must be between " + min + " and " + max + ", got " + e.asLong());
            }
            out.add(e.asLong());
        }
        return out;
    }

    /** A table of string values ({@code labels = { host = "a", rack = "r1" }}), in file order. */
    public java.util.Map<String, String> stringMap(String k) {
        JsonNode v = get(k);
        java.util.Map<String, String> out = new java.util.LinkedHashMap<>();
        if (v == null) {
            return out;
        }
        if (!v.isObject()) {
            throw new ConfigException(key(k), "expected a table of strings, got " + describe(v));
        }
        for (var e : v.properties()) {
            if (!e.getValue().isTextual()) {
                throw new ConfigException(key(k) + "." + e.getKey(), "expected a string, got " + describe(e.getValue()));
            }
            out.put(e.getKey(), e.getValue().asText());
        }
        return out;
    }

    /** A list of "host:port" addresses (empty when the key is absent); a bad one names its index. */
    public List<InetSocketAddress> addresses(String k) {
        List<InetSocketAddress> out = new java.util.ArrayList<>();
        List<String> items = strings(k, List.of());
        for (int i = 0; i < items.size(); i++) {
            try {
                out.add(Addresses.parse(items.get(i).trim()));
            } catch (IllegalArgumentException e) {
                throw new ConfigException(key(k) + "[" + i + "]", e.getMessage());
            }
        }
        return out;
    }

    /** A "host:port" address. */
    public Optional<InetSocketAddress> address(String k) {
        String s = string(k, null);
        if (s == null) {
            return Optional.empty();
        }
        try {
            return Optional.of(Addresses.parse(s));
        } catch (IllegalArgumentException e) {
            throw new ConfigException(key(k), e.getMessage());
        }
    }

    /** Throws on the first key that no getter asked for (in this table or a sub-table read). */
    public void rejectUnknownKeys() {
        for (Iterator<String> it = node.fieldNames(); it.hasNext(); ) {
            String k = it.next();
            if (!read.contains(k)) {
                throw new ConfigException(key(k), "unknown key" + suggestion(k));
            }
        }
        for (ConfigNode c : children) {
            c.rejectUnknownKeys();
        }
    }

    private String suggestion(String unknown) {
        String best = null;
        int bestDist = 3;
        for (String k : read) {
            int d = distance(unknown, k);
            if (d < bestDist) {
                bestDist = d;
                best = k;
            }
        }
        return best == null ? "" : " (did you mean " + key(best) + "?)";
    }

    private static int distance(String a, String b) {
        int[] prev = new int[b.length() + 1];
        int[] cur = new int[b.length() + 1];
        for (int j = 0; j <= b.length(); j++) {
            prev[j] = j;
        }
        for (int i = 1; i <= a.length(); i++) {
            cur[0] = i;
            for (int j = 1; j <= b.length(); j++) {
                int cost = a.charAt(i - 1) == b.charAt(j - 1) ? 0 : 1;
                cur[j] = Math.min(Math.min(cur[j - 1] + 1, prev[j] + 1), prev[j - 1] + cost);
            }
            int[] t = prev;
            prev = cur;
            cur = t;
        }
        return prev[b.length()];
    }

    private static String describe(JsonNode v) {
        if (v.isTextual()) {
            return "string \"" + v.asText() + "\"";
        }
        if (v.isNumber()) {
            return "number " + v.asText();
        }
        if (v.isBoolean()) {
            return "boolean " + v.asText();
        }
        if (v.isArray()) {
            return "an array";
        }
        if (v.isObject()) {
            return "a table";
        }
        return v.getNodeType().toString().toLowerCase(Locale.ROOT);
    }
}
