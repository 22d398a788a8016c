package io.strata.mgmtd;

import io.strata.protocol.mgmtd.MgmtdMessage;

import io.strata.protocol.mgmtd.MgmtdMessages;
import io.strata.protocol.mgmtd.NodeRole;
import io.strata.protocol.mgmtd.TargetReport;
import io.netty.buffer.ByteBuf;
import io.strata.core.NodeId;
import io.strata.core.TargetId;
import io.strata.core.rpc.Wire;
import io.strata.protocol.routing.NodeInfo;
import io.strata.protocol.routing.LocalState;
import java.util.ArrayList;
import java.util.List;

/**
 * The entries of the cluster manager's Ratis log. Each is applied by {@link ClusterState}
 * deterministically on every peer. Wire form: u8 tag, then the fields (docs/internals/placement.md).
 * Heartbeats that change nothing never become commands: the log only grows when state changes.
 */
public sealed interface MgmtdCommand {
    /** A node starts or rejoins. A new {@code incarnation} means the node restarted. */
    record Register(NodeInfo node, NodeRole role, long incarnation, List<TargetId> targets) implements MgmtdCommand {
        public Register {
            targets = List.copyOf(targets);
        }
    }

    /** Local target states that differ from what the manager holds. */
    record Report(NodeId node, long incarnation, List<TargetReport> reports) implements MgmtdCommand {
        public Report {
            reports = List.copyOf(reports);
        }
    }

    /** The leader measured that the node's lease ran out. */
    record Expire(NodeId node, long incarnation) implements MgmtdCommand {
    }

    /** A new version of chain table {@code tableId} from the free targets (plus the previous version's chains). */
    record CreateTable(int tableId, int replicas) implements MgmtdCommand {
    }

    /**
     * Stores a scheduler hint: {@code id} 0 creates one under the next id, a positive {@code id}
     * replaces that hint's value if it is at {@code expectedVersion} ({@link ClusterState} checks).
     */
    record PutHint(MgmtdMessage.PutHint request) implements MgmtdCommand {
        PutHint(long id, long expectedVersion, byte[] value) {
            this(new MgmtdMessage.PutHint(id, expectedVersion, value));
        }

        long id() {
            return request.id();
        }

        long expectedVersion() {
            return request.expectedVersion();
        }

        byte[] value() {
            return request.value();
        }
    }

    /** Deletes a scheduler hint; {@code expectedVersion} 0 deletes whatever its version. */
    record DeleteHint(long id, long expectedVersion) implements MgmtdCommand {
    }

    /**
     * Revokes a token until {@code expiresAt} (epoch seconds); first forgets the revocations that
     * ran out by {@code now}, the leader's clock when it logged the command, so that every peer
     * forgets the same ones.
     */
    record Revoke(MgmtdMessage.Revocation revocation, long now) implements MgmtdCommand {
    }

    static void encode(MgmtdCommand c, ByteBuf out) {
        switch (c) {
            case Register r -> {
                out.writeByte(1);
                MgmtdMessages.encodeNode(r.node(), out);
                Wire.writeEnum(out, r.role());
                out.writeLong(r.incarnation());
                out.writeInt(r.targets().size());
                r.targets().forEach(t -> out.writeLong(t.value()));
            }
            case Report r -> {
                out.writeByte(2);
                out.writeInt(r.node().value());
                out.writeLong(r.incarnation());
                MgmtdMessages.encodeReports(r.reports(), out);
            }
            case Expire e -> {
                out.writeByte(3);
                out.writeInt(e.node().value());
                out.writeLong(e.incarnation());
            }
            case CreateTable t -> {
                out.writeByte(4);
                out.writeInt(t.tableId());
                out.writeByte(t.replicas());
            }
            case PutHint p -> {
                out.writeByte(5);
                out.writeLong(p.id());
                out.writeLong(p.expectedVersion());
                Wire.writeBytes(out, p.value());
            }
            case DeleteHint d -> {
                out.writeByte(6);
                out.writeLong(d.id());
                out.writeLong(d.expectedVersion());
            }
            case Revoke r -> {
                out.writeByte(7);
                MgmtdMessages.encodeRevocation(r.revocation(), out);
                out.writeLong(r.now());
            }
        }
    }

    static MgmtdCommand decode(ByteBuf in) {
        int tag = Wire.readU8(in, "command tag");
        MgmtdCommand c = switch (tag) {
            case 1 -> {
                NodeInfo n = MgmtdMessages.decodeNode(in);
                NodeRole role = Wire.readEnum(in, NodeRole.class, "role");
                long inc = Wire.readLong(in, "incarnation");
                int k = Wire.readCount(in, "targets", MgmtdMessages.MAX_TARGETS, 8);
                List<TargetId> ts = new ArrayList<>();
                for (int i = 0; i < k; i++) {
                    ts.add(TargetId.of(Wire.readLong(in, "target")));
                }
                yield new Register(n, role, inc, ts);
            }
            case 2 -> new Report(NodeId.of(Wire.readInt(in, "node")), Wire.readLong(in, "incarnation"), MgmtdMessages.decodeReports(in));
            case 3 -> new Expire(NodeId.of(Wire.readInt(in, "node")), Wire.readLong(in, "incarnation"));
            case 4 -> {
                int id = Wire.readInt(in, "table id", 1, Integer.MAX_VALUE);
                int r = Wire.readU8(in, "replicas");
                if (r < 1 || r > 5) {
                    throw new Wire.Malformed("replicas out of range [1, 5]: " + r);
                }
                yield new CreateTable(id, r);
            }
            case 5 -> new PutHint(Wire.readLong(in, "hint id"), Wire.readLong(in, "expected version"),
                    Wire.readBytes(in, MgmtdMessages.MAX_PUT_HINT_BYTES, "hint value"));
            case 6 -> new DeleteHint(Wire.readLong(in, "hint id"), Wire.readLong(in, "expected version"));
            case 7 -> new Revoke(MgmtdMessages.decodeRevocation(in), Wire.readLong(in, "now"));
            default -> throw new Wire.Malformed("unknown command tag " + tag);
        };
        if (in.isReadable()) {
            throw new Wire.Malformed("command: " + in.readableBytes() + " bytes left");
        }
        return c;
    }
}
