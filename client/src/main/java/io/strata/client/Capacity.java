package io.strata.client;

/**
 * What the cluster can hold for files, as {@code df} on a mount shows it: the raw capacity and
 * free bytes of the storage nodes' file systems (each counted once, see the cluster manager's
 * {@code GetSpace}) divided by {@code replicas}, the root policy's replica count, because each
 * byte of a file is stored that many times. {@code reporting} of {@code targets} serving
 * targets had reported their space; fewer means the figures are low.
 */
public record Capacity(long totalBytes, long freeBytes, int replicas, int reporting, int targets) {
    public Capacity {
        if (replicas < 1 || totalBytes < 0 || freeBytes < 0 || freeBytes > totalBytes) {
            throw new IllegalArgumentException("capacity " + freeBytes + " free of " + totalBytes + " at " + replicas + " replicas");
        }
    }
}
