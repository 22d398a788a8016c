package io.strata.client;

import io.strata.protocol.meta.DeviceNumber;

/**
 * What {@code lstat(2)} reports about any entry: its {@link FileStatus} and, for a character or
 * block device, its device number {@code rdev} ({@link DeviceNumber}; 0 for every other type).
 */
public record EntryStatus(FileStatus status, long rdev) {
    public EntryStatus {
        if (rdev != 0 && !status.type().isDevice()) {
            throw new IllegalArgumentException("a " + status.type() + " has no device number (got " + rdev + ")");
        }
    }
}
