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
            new Figure("small_delete", "small-delete", Unit.OPS_PER_S));

    /** How a figure is read from a job: throughput or operations (files for the file engines). */
    public enum Unit {
        MB_PER_S("MB/s"), OPS_PER_S("ops/s");

        public final String label;

        Unit(String label) {
            this.label = label;
        }
    }

    /** One figure of the table: its key in the result line, the fio job it comes from, its unit. */
    public record Figure(String key, String job, Unit unit) {
        public double of(FioJson.Job j) {
            return unit == Unit.MB_PER_S ? j.mbPerSec() : j.iops();
        }
    }

    public final String file;
    public final boolean cold;
    public final List<Figure> figures;

    Workload(String file, boolean cold, Figure... figures) {
        this.file = file;
        this.cold = cold;
        this.figures = List.of(figures);
    }

    public static Workload byName(String name) {
        for (Workload w : values()) {
            if (w.file.equals(name)) {
                return w;
            }
        }
        throw new IllegalArgumentException("unknown workload " + name + " (one of checkpoint-save, checkpoint-restore, sample-read-4k,"
                + " sample-read-128k, small-files)");
    }
}
