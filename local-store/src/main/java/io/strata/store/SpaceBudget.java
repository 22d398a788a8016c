package io.strata.store;

import java.io.IOException;
import java.nio.file.FileStore;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.function.LongSupplier;

/**
 * How much a store may hold: at most {@code capacity} bytes of its own, and never so much that
 * the file system's usable space falls under {@code floor}. A store asks {@link #need} before a
 * write (how much it must free first, or refuse the write) and in its sweeps (how much to give
 * back when something else ate into the floor). Used bytes are the store's own count (its
 * files' footprint), usable bytes the file system's.
 */
public final class SpaceBudget {
    private final long capacity;
    private final long floor;
    private final LongSupplier usable;

    /** {@code usable} reports the file system's usable bytes (see {@link #usableSpace}). */
    public SpaceBudget(long capacity, long floor, LongSupplier usable) {
        this.capacity = capacity;
        this.floor = floor;
        this.usable = usable;
    }

    /**
     * The usable bytes of the file system holding {@code dir}, read at each call; 0 when the
     * file system cannot say (the store then behaves as if the disk were full).
     */
    public static LongSupplier usableSpace(Path dir) throws IOException {
        FileStore store = Files.getFileStore(dir);
        return () -> {
            try {
                return store.getUsableSpace();
            } catch (IOException e) {
                return 0;
            }
        };
    }

    public long capacity() {
        return capacity;
    }

    /** The file system's usable bytes now. */
    public long usable() {
        return usable.getAsLong();
    }

    /**
     * What must be freed before {@code incoming} more bytes are stored, with {@code used} bytes
     * held now and {@code usable} bytes free on the file system (0 incoming: what to give back).
     */
    public Need need(long used, long incoming, long usable) {
        return new Need(used + incoming - capacity, floor + incoming - usable);
    }

    /**
     * Bytes to free: {@code overCapacity} to stay within the capacity, {@code underFloor} to keep
     * the file system's free space at the floor (either may be negative: room to spare).
     */
    public record Need(long overCapacity, long underFloor) {
        /** The bytes to free to satisfy both (0 or negative: none). */
        public long bytes() {
            return Math.max(overCapacity, underFloor);
        }

        /** Whether the floor, not the capacity, is what asks for the most room. */
        public boolean floorBound() {
            return underFloor > 0 && underFloor >= overCapacity;
        }
    }
}
