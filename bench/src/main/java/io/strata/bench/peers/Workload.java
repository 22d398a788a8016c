package io.strata.bench.peers;

import java.util.List;

/**
 * The fio suite of {@code bench/fio/}, as {@code strata bench peers} runs it: one job file per
 * workload, the figures read from its report, and whether the page cache is dropped first (cold
 * reads).
 */
public enum Workload {
    CHECKPOINT_SAVE("checkpoint-save", false, new Figure("checkpoint_save", "checkpoint-save", Unit.MB_PER_S)),
    CHECKPOINT_RESTORE("checkpoint-restore", true, new Figure("checkpoint_restore", "checkpoint-restore", Unit.MB_PER_S)),
    SAMPLE_READ_4K("sample-read-4k", true, new Figure("sample_read_4k", "sample-read-4k", Unit.OPS_PER_S)),
    SAMPLE_READ_128K("sample-read-128k", true, new Figure("sample_read_128k", "sample-read-128k", Unit.MB_PER_S)),
    SMALL_FILES("small-files", false,
            new Figure("small_create", "small-create", Unit.OPS_PER_S),
            new Figure("small_stat", "small-stat", Unit.OPS_PER_S),
            new Figure("small_read", "small-read", Unit.OPS_PER_S),
            new Figure("small_delete", "small-delete", Unit.OPS_PER_S)),
    /**
     * The small files with one worker ({@code bench/peers/small-files-one.py}, not fio): each
     * operation waits for the one before it, as in a single {@code tar -x} or {@code rm -rf};
     * FIO_FILES files, rate and p50/p99 latency per operation.
     */
    SMALL_FILES_ONE("small-files-1", false, "bench/peers/small-files-one.py", oneWorker());

    private static Figure[] oneWorker() {
        List<Figure> f = new java.util.ArrayList<>();
        for (String op : List.of("create", "stat", "read", "unlink")) {
            f.add(new Figure("one_" + op, "one-" + op, Unit.OPS_PER_S));
            f.add(new Figure("one_" + op + "_p50", "one-" + op + "-p50", Unit.MS));
            f.add(new Figure("one_" + op + "_p99", "one-" + op + "-p99", Unit.MS));
        }
        return f.toArray(Figure[]::new);
    }

    /**
     * How a figure is read from a job: throughput or operations (files for the file engines), or
     * a latency, where less is better.
     */
    public enum Unit {
        MB_PER_S("MB/s", false), OPS_PER_S("ops/s", false), MS("ms", true);

        public final String label;
        public final boolean lowerIsBetter;

        Unit(String label, boolean lowerIsBetter) {
            this.label = label;
            this.lowerIsBetter = lowerIsBetter;
        }
    }

    /** One figure of the table: its key in the result line, the fio job it comes from, its unit. */
    public record Figure(String key, String job, Unit unit) {
        public double of(FioJson.Job j) {
            return unit == Unit.MB_PER_S ? j.mbPerSec() : j.iops();
        }
    }

    /** The workload's name: its fio job file is {@code bench/fio/<file>.fio} unless it has a {@link #script}. */
    public final String file;
    public final boolean cold;
    /** A program run instead of fio, relative to the checkout: {@code SCRIPT DIR FILES OUT.json}; null for fio. */
    public final String script;
    public final List<Figure> figures;

    Workload(String file, boolean cold, Figure... figures) {
        this(file, cold, null, figures);
    }

    Workload(String file, boolean cold, String script, Figure... figures) {
        this.file = file;
        this.cold = cold;
        this.script = script;
        this.figures = List.of(figures);
    }

    public static Workload byName(String name) {
        for (Workload w : values()) {
            if (w.file.equals(name)) {
                return w;
            }
        }
        throw new IllegalArgumentException("unknown workload " + name + " (one of checkpoint-save, checkpoint-restore, sample-read-4k,"
                + " sample-read-128k, small-files, small-files-1)");
    }
}
