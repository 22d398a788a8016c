package io.strata.core.buffer;

/**
 * Netty settings every Strata process runs with, set before Netty's buffer classes initialise
 * (daemons call {@link #apply()} first thing in main). A setting given on the command line
 * ({@code -Dio.netty....}) wins.
 *
 * <p>{@code io.netty.allocator.lowMemory=false}: Netty's adaptive allocator (the channels'
 * default) switches to a low-memory mode when the JVM may use less than 512 MiB of direct
 * memory, which by default is its heap size, as for the daemons {@code strata up} starts with
 * 384–512 MiB heaps. In that mode it pools no buffer above 256 KiB, so every 1 MiB receive
 * segment of a chunk write or read is allocated with malloc, zeroed and freed again: on a
 * storage node during 1 MiB chain writes that was 5–6 % of its CPU samples, and a 1 MiB
 * allocation and release cost about 21 µs against 0.1 µs with the mode off
 * ({@code bin/strata bench jmh Allocator}; docs/benchmarks.md, "Buffers of a
 * mebibyte"). Strata's memory is bounded by its own budgets (write gathering, in-flight
 * requests, the L1), not by Netty's mode.
 */
public final class NettyDefaults {
    private NettyDefaults() {
    }

    /** Sets the defaults not already set; later calls do nothing more. */
    public static void apply() {
        if (System.getProperty("io.netty.allocator.lowMemory") == null) {
            System.setProperty("io.netty.allocator.lowMemory", "false");
        }
    }
}
