package io.strata.bench.peers;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Reads fio's {@code --output-format=json} report: one {@link Job} per job (or per reporting
 * group: the suite's job files use {@code group_reporting}, so one entry per job section).
 * fio counts the {@code filestat} and {@code filedelete} engines' operations as reads, one per
 * file; the direction with bytes moved is the job's direction.
 */
public final class FioJson {
    private static final ObjectMapper MAPPER = new ObjectMapper();

    private FioJson() {
    }

    /**
     * One job's figures in the direction it moved bytes.
     *
     * @param write    true when the job wrote (its write side moved bytes)
     * @param bytes    bytes moved
     * @param mbPerSec throughput, 10^6 bytes per second
     * @param iops     operations per second (files per second for the file engines)
     * @param p99Us    99th percentile completion latency in microseconds, 0 when fio gave none
     * @param error    fio's error code for the job, 0 when it succeeded
     */
    public record Job(String name, boolean write, long bytes, double mbPerSec, double iops, double p99Us, int error) {
    }

    /** Parses a whole fio JSON report; keys are job names in report order. */
    public static Map<String, Job> parse(String json) throws IOException {
        // fio may print notes ("fio: ...") before the JSON document when writing to stdout
        int start = json.indexOf('{');
        if (start < 0) {
            throw new IOException("not a fio JSON report (no '{')");
        }
        JsonNode root = MAPPER.readTree(json.substring(start));
        JsonNode jobs = root.path("jobs");
        if (!jobs.isArray() || jobs.isEmpty()) {
            throw new IOException("not a fio JSON report (no \"jobs\" array)");
        }
        Map<String, Job> out = new LinkedHashMap<>();
        for (JsonNode j : jobs) {
            String name = j.path("jobname").asText();
            JsonNode w = j.path("write");
            JsonNode r = j.path("read");
            boolean write = w.path("io_bytes").asLong() > 0 && w.path("io_bytes").asLong() >= r.path("io_bytes").asLong();
            JsonNode s = write ? w : r;
            JsonNode pct = s.path("clat_ns").path("percentile");
            if (pct.isMissingNode() || pct.isEmpty()) {
                pct = s.path("lat_ns").path("percentile");
            }
            double p99 = pct.path("99.000000").asDouble(0) / 1000.0;
            out.put(name, new Job(name, write, s.path("io_bytes").asLong(), s.path("bw_bytes").asDouble() / 1e6,
                    s.path("iops").asDouble(), p99, j.path("error").asInt(0)));
        }
        return out;
    }
}
