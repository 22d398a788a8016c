package io.strata.bench.jmh;

import io.strata.core.ChainId;
import io.strata.core.InodeId;
import io.strata.namespace.ChainChooser;
import io.strata.namespace.ChainTables;
import io.strata.protocol.meta.Layout;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

/**
 * Chain selection: choosing a new file's chains ({@link ChainChooser#choose}, once per create)
 * and mapping a chunk to its chain ({@link Layout#chainOf}, once per chunk I/O), against the raw
 * baseline of indexing an int array with {@code index % width}.
 *
 * <p>Run: {@code bin/strata bench jmh ChainSelection}.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
public class ChainSelectionBenchmark {
    @Param({"16", "200"})
    int width;

    private ChainTables.Table table;
    private Layout layout;
    private int[] raw;
    private long inode = 1000;
    private long chunk;

    @Setup(Level.Trial)
    public void setUp() {
        List<ChainId> chains = new ArrayList<>();
        for (int i = 1; i <= 1024; i++) {
            chains.add(ChainId.of(i));
        }
        table = new ChainTables.Table(1, 1, 3, chains);
        layout = ChainChooser.choose(InodeId.of(42), table, 1 << 20, width);
        raw = new int[width];
        for (int i = 0; i < width; i++) {
            raw[i] = layout.chains().get(i).value();
        }
    }

    @Benchmark
    public Layout chooseForNewFile() {
        return ChainChooser.choose(InodeId.of(++inode), table, 1 << 20, width);
    }

    @Benchmark
    public ChainId chainOfChunk() {
        return layout.chainOf(++chunk);
    }

    @Benchmark
    public int rawModuloIndex() {
        return raw[(int) (++chunk % width)];
    }
}
