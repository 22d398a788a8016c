package io.strata.protocol.meta;

import io.netty.buffer.ByteBuf;
import io.strata.core.InodeId;
import io.strata.core.rpc.Wire;
import java.time.Instant;
import java.util.List;
import java.util.Locale;

/**
 * Checkpoint generations as the meta service keeps and answers them (docs/checkpoints.md). A
 * <b>checkpoint root</b> is a directory whose own policy sets {@code profile=checkpoint}; each
 * direct subdirectory is a <b>generation</b>, written by many ranks at once and then
 * <b>committed</b>: one transaction checks every file and publishes a manifest (path, size,
 * CRC32C). Readers and {@code latest} see committed generations only; a committed generation's
 * files cannot change.
 */
public final class Checkpoint {
    private Checkpoint() {
    }

    /** Largest number of files (and directories) one generation's manifest holds. */
    public static final int MAX_ENTRIES = 100_000;
    /** A content checksum that is not known (the file was not written once, front to back, through one handle). */
    public static final long NO_CRC = -1;

    /** The level a commit or a wait asks for. */
    public enum Level implements Wire.Tagged {
        /** On the L2 pool's copies (or already in L3). */
        L2(1),
        /** Durable in L3. */
        L3(2);

        private final int tag;

        Level(int tag) {
            this.tag = tag;
        }

        @Override
        public int wireTag() {
            return tag;
        }

        public String text() {
            return name().toLowerCase(Locale.ROOT);
        }

        public static Level parse(String s) {
            String v = s == null ? "" : s.trim().toLowerCase(Locale.ROOT);
            return switch (v) {
                case "l2" -> L2;
                case "l3" -> L3;
                default -> throw new IllegalArgumentException("a checkpoint level is l2 or l3, not \"" + s + "\"");
            };
        }
    }

    /** Where a generation is in its life. */
    public enum State implements Wire.Tagged {
        /** Being written: not seen by readers, collected after the root's grace period once no writer is left. */
        WRITING(1),
        /** Published with its manifest; immutable. */
        COMMITTED(2),
        /** Withdrawn (retention, or a user removed part of it): its tree is being removed. */
        REMOVING(3);

        private final int tag;

        State(int tag) {
            this.tag = tag;
        }

        @Override
        public int wireTag() {
            return tag;
        }

        public String text() {
            return name().toLowerCase(Locale.ROOT);
        }
    }

    /** How far a committed generation's bytes have come: staged in L2, draining to L3, durable in L3; lost when a file's L2 copies are gone. */
    public enum Durability implements Wire.Tagged {
        NONE(0), L2(1), DRAINING(2), L3(3), LOST(4);

        private final int tag;

        Durability(int tag) {
            this.tag = tag;
        }

        @Override
        public int wireTag() {
            return tag;
        }

        public String text() {
            return name().toLowerCase(Locale.ROOT);
        }

        /** Whether a generation this durable satisfies {@code level}. */
        public boolean reaches(Level level) {
            return switch (level) {
                case L2 -> this == L2 || this == DRAINING || this == L3;
                case L3 -> this == L3;
            };
        }
    }

    /** A file the committer expects in the generation: its path relative to the generation, its size ({@code -1}: any). */
    public record Expected(String path, long size) {
        public Expected {
            if (path == null || path.isEmpty() || path.startsWith("/")) {
                throw new IllegalArgumentException("an expected file needs a path relative to the generation, got \"" + path + "\"");
            }
        }
    }

    /**
     * One generation.
     *
     * @param root          the checkpoint root directory
     * @param dir           the generation's directory
     * @param name          its name in the root
     * @param seq           commit order within the root (1, 2, ...); 0 until committed
     * @param level         the level its commit asked for (null before commit)
     * @param files         regular files in its manifest
     * @param bytes         their total size
     * @param unchecked     files without a content checksum
     * @param startedMillis when its directory was made (writes started)
     * @param committedMillis when its manifest was published (0: not yet)
     * @param l2Millis      when it was known to be at L2 or better (0: not yet)
     * @param drainingMillis when its drain to L3 was first seen under way (0: not yet)
     * @param l3Millis      when every file was durable in L3 (0: not yet)
     */
    public record Generation(InodeId root, InodeId dir, String name, State state, Durability durability, Level level, long seq,
                             long files, long bytes, long unchecked, boolean pinned, long startedMillis, long committedMillis,
                             long l2Millis, long drainingMillis, long l3Millis) {
        public Generation {
            name = name == null ? "" : name;
        }

        public boolean committed() {
            return state == State.COMMITTED;
        }

        public Generation with(State s, Durability d) {
            return new Generation(root, dir, name, s, d, level, seq, files, bytes, unchecked, pinned, startedMillis, committedMillis,
                    l2Millis, drainingMillis, l3Millis);
        }

        public Generation withPinned(boolean p) {
            return new Generation(root, dir, name, state, durability, level, seq, files, bytes, unchecked, p, startedMillis,
                    committedMillis, l2Millis, drainingMillis, l3Millis);
        }

        /** {@code key=value} lines, as {@code user.strata.ckpt.status} and {@code strata ckpt status} print them. */
        public String statusText(String rootPath) {
            return "generation=" + name + "\nroot=" + rootPath + "\nstate=" + state.text() + "\ndurability=" + durability.text()
                    + "\nlevel=" + (level == null ? "-" : level.text()) + "\nseq=" + seq + "\nfiles=" + files + "\nbytes=" + bytes
                    + "\nunchecked=" + unchecked + "\npinned=" + (pinned ? "yes" : "no") + "\nstarted=" + time(startedMillis)
                    + "\ncommitted=" + time(committedMillis) + "\nl2=" + time(l2Millis) + "\ndraining=" + time(drainingMillis)
                    + "\nl3=" + time(l3Millis) + "\n";
        }

        public static String time(long millis) {
            return millis == 0 ? "-" : Instant.ofEpochMilli(millis).toString();
        }

        public void encode(ByteBuf out) {
            out.writeLong(root.value()).writeLong(dir.value());
            Wire.writeString(out, name);
            Wire.writeEnum(out, state);
            Wire.writeEnum(out, durability);
            out.writeByte(level == null ? 0 : level.wireTag());
            out.writeLong(seq).writeLong(files).writeLong(bytes).writeLong(unchecked);
            Wire.writeBool(out, pinned);
            out.writeLong(startedMillis).writeLong(committedMillis).writeLong(l2Millis).writeLong(drainingMillis).writeLong(l3Millis);
        }

        public static Generation decode(ByteBuf in) {
            InodeId root = InodeId.of(Wire.readLong(in, "root"));
            InodeId dir = InodeId.of(Wire.readLong(in, "generation"));
            String name = Wire.readString(in, MetaMessages.MAX_NAME, "generation name");
            State state = Wire.readEnum(in, State.class, "generation state");
            Durability d = Wire.readEnum(in, Durability.class, "generation durability");
            int lt = Wire.readU8(in, "level");
            Level level = null;
            if (lt != 0) {
                for (Level l : Level.values()) {
                    if (l.wireTag() == lt) {
                        level = l;
                    }
                }
                if (level == null) {
                    throw new Wire.Malformed("unknown level tag " + lt);
                }
            }
            return new Generation(root, dir, name, state, d, level, Wire.readLong(in, "seq"), Wire.readLong(in, "files"),
                    Wire.readLong(in, "bytes"), Wire.readLong(in, "unchecked"), Wire.readBool(in, "pinned"),
                    Wire.readLong(in, "started"), Wire.readLong(in, "committed"), Wire.readLong(in, "l2"), Wire.readLong(in, "draining"),
                    Wire.readLong(in, "l3"));
        }
    }

    /**
     * One manifest entry: a file (with its size and CRC32C, {@link #NO_CRC} when not known) or a
     * directory (size and CRC 0) of a committed generation, by its path relative to the generation.
     */
    public record Entry(String path, InodeId inode, InodeType type, long size, long crc) {
        public boolean hasCrc() {
            return crc != NO_CRC;
        }

        public void encode(ByteBuf out) {
            Wire.writeString(out, path);
            out.writeLong(inode.value());
            Wire.writeEnum(out, type);
            out.writeLong(size).writeLong(crc);
        }

        public static Entry decode(ByteBuf in) {
            return new Entry(Wire.readString(in, MetaMessages.MAX_PATH, "manifest path"), InodeId.of(Wire.readLong(in, "inode")),
                    Wire.readEnum(in, InodeType.class, "type"), Wire.readLong(in, "size"), Wire.readLong(in, "crc"));
        }
    }

    /** What a checkpoint request asks ({@link MetaMessage.Ckpt}). */
    public enum Op implements Wire.Tagged {
        COMMIT(1), STATUS(2), LIST(3), MANIFEST(4), PIN(5), UNPIN(6);

        private final int tag;

        Op(int tag) {
            this.tag = tag;
        }

        @Override
        public int wireTag() {
            return tag;
        }
    }

    /** A page of a manifest: entries after a path, and whether more follow. */
    public record ManifestPage(List<Entry> entries, boolean more) {
    }
}
