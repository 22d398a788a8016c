package io.strata.protocol.meta;

/**
 * Device numbers as Linux encodes them in a 64-bit {@code dev_t} (glibc's {@code makedev}): the
 * minor's low 8 bits in bits 0-7 and its upper 24 in bits 20-43, the major's low 12 bits in bits
 * 8-19 and its upper 20 in bits 44-63.
 * For majors below 4096 and minors below 2^20 the value equals the 32-bit encoding FUSE
 * carries, so a number passes unchanged from {@code mknod(2)} through the mount to the
 * namespace and back to {@code stat(2)}.
 */
public final class DeviceNumber {
    private DeviceNumber() {
    }

    public static long of(long major, long minor) {
        if (major < 0 || major > 0xFFFF_FFFFL || minor < 0 || minor > 0xFFFF_FFFFL) {
            throw new IllegalArgumentException("device " + major + ":" + minor + " out of range (each 0..2^32-1)");
        }
        return ((major & 0xFFFL) << 8) | ((major & ~0xFFFL) << 32) | (minor & 0xFFL) | ((minor & ~0xFFL) << 12);
    }

    public static long major(long dev) {
        return ((dev >>> 8) & 0xFFFL) | ((dev >>> 32) & 0xFFFF_F000L);
    }

    public static long minor(long dev) {
        return (dev & 0xFFL) | ((dev >>> 12) & 0xFFFF_FF00L);
    }

    /** {@code major:minor}, as ls(1) shows a device. */
    public static String toString(long dev) {
        return major(dev) + ":" + minor(dev);
    }
}
