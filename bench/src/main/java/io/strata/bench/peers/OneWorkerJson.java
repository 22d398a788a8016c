package io.strata.bench.peers;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Reads the report of {@code bench/peers/small-files-one.py}:
 * {@code {"create": {"ops_per_s": .., "p50_ms": .., "p99_ms": ..}, ...}}, as figures named
 * {@code one-create}, {@code one-create-p50}, {@code one-create-p99} and so on (the figure
 * names of {@link Workload#SMALL_FILES_ONE}).
 */
public final class OneWorkerJson {
    private static final ObjectMapper MAPPER = new ObjectMapper();

    private OneWorkerJson() {
    }

    public static Map<String, Double> parse(String json) throws IOException {
        JsonNode root = MAPPER.readTree(json);
        if (root == null || !root.isObject() || root.isEmpty()) {
            throw new IOException("not a small-files-one report (no operations)");
        }
        Map<String, Double> out = new LinkedHashMap<>();
        for (Map.Entry<String, JsonNode> op : root.properties()) {
            JsonNode v = op.getValue();
            for (String field : new String[] {"ops_per_s", "p50_ms", "p99_ms"}) {
                if (!v.path(field).isNumber()) {
                    throw new IOException("small-files-one report: " + op.getKey() + " has no number " + field);
                }
            }
            out.put("one-" + op.getKey(), v.get("ops_per_s").asDouble());
            out.put("one-" + op.getKey() + "-p50", v.get("p50_ms").asDouble());
            out.put("one-" + op.getKey() + "-p99", v.get("p99_ms").asDouble());
        }
        return out;
    }
}
