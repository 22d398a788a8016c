package io.strata.protocol.storage;

import io.netty.buffer.ByteBuf;
import io.strata.core.rpc.Wire;

/**
 * One target's scrub, as a storage node reports it ({@link StorageMessage.ScrubReport}).
 *
 * @param target        the target id
 * @param running       a pass is under way
 * @param chunks        chunks the target held when the current (or last) pass started
 * @param checkedChunks chunks the current (or last) pass has read and checked so far
 * @param checkedBytes  bytes the current (or last) pass has read and checked so far
 * @param passes        passes completed since the node started
 * @param corrupt       corrupt chunk versions found since the node started (by a pass, a read or an update)
 * @param repaired      of those, repaired from another replica
 * @param unrepaired    of those, not repaired (no replica had a good copy of the same version)
 * @param startedMillis when the current (or last) pass started, epoch milliseconds; 0: never
 * @param endedMillis   when the last pass ended, epoch milliseconds; 0: never
 */
public record TargetScrub(long target, boolean running, long chunks, long checkedChunks, long checkedBytes, long passes,
                          long corrupt, long repaired, long unrepaired, long startedMillis, long endedMillis) {
    /** Encoded size. */
    public static final int BYTES = 8 + 1 + 9 * 8;

    void encode(ByteBuf out) {
        out.writeLong(target);
        Wire.writeBool(out, running);
        out.writeLong(chunks).writeLong(checkedChunks).writeLong(checkedBytes).writeLong(passes).writeLong(corrupt)
                .writeLong(repaired).writeLong(unrepaired).writeLong(startedMillis).writeLong(endedMillis);
    }

    static TargetScrub decode(ByteBuf in) {
        return new TargetScrub(Wire.readLong(in, "target"), Wire.readBool(in, "running"), Wire.readLong(in, "chunks"),
                Wire.readLong(in, "checked chunks"), Wire.readLong(in, "checked bytes"), Wire.readLong(in, "passes"),
                Wire.readLong(in, "corrupt"), Wire.readLong(in, "repaired"), Wire.readLong(in, "unrepaired"),
                Wire.readLong(in, "started"), Wire.readLong(in, "ended"));
    }
}
