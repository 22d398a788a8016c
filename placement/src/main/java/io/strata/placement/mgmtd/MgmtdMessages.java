package io.strata.placement.mgmtd;

import io.netty.buffer.ByteBuf;
import io.strata.core.NodeId;
import io.strata.core.TargetId;
import io.strata.core.rpc.MessageType;
import io.strata.core.rpc.Wire;
import io.strata.placement.RoutingCodec;
import io.strata.placement.chains.LocalState;
import io.strata.placement.mgmtd.MgmtdMessage.ChainTableCreated;
import io.strata.placement.mgmtd.MgmtdMessage.ClusterStatus;
import io.strata.placement.mgmtd.MgmtdMessage.CreateChainTable;
import io.strata.placement.mgmtd.MgmtdMessage.GetRouting;
import io.strata.placement.mgmtd.MgmtdMessage.GetStatus;
import io.strata.placement.mgmtd.MgmtdMessage.Heartbeat;
import io.strata.placement.mgmtd.MgmtdMessage.LeaseGranted;
import io.strata.placement.mgmtd.MgmtdMessage.NodeStatus;
import io.strata.placement.mgmtd.MgmtdMessage.PeerStatus;
import io.strata.placement.mgmtd.MgmtdMessage.RegisterNode;
import io.strata.placement.mgmtd.MgmtdMessage.RoutingReply;
import io.strata.placement.mgmtd.MgmtdMessage.TargetStatus;
import java.util.ArrayList;
import java.util.List;

/** Wire types of {@link MgmtdMessage} (tags 200-299; docs/internals/placement.md lists the layouts). */
public final class MgmtdMessages {
    public static final MessageType<RegisterNode> REGISTER_NODE = MessageType.of(200, RegisterNode.class,
            (m, out) -> {
                MgmtdCommand.encodeNode(m.node(), out);
                Wire.writeEnum(out, m.role());
                out.writeLong(m.incarnation());
                out.writeInt(m.targets().size());
                m.targets().forEach(t -> out.writeLong(t.value()));
            },
            in -> {
                var node = MgmtdCommand.decodeNode(in);
                NodeRole role = Wire.readEnum(in, NodeRole.class, "role");
                long inc = Wire.readLong(in, "incarnation");
                int k = Wire.readCount(in, "targets", MgmtdCommand.MAX_TARGETS, 8);
                List<TargetId> ts = new ArrayList<>();
                for (int i = 0; i < k; i++) {
                    ts.add(TargetId.of(Wire.readLong(in, "target")));
                }
                return new RegisterNode(node, role, inc, ts);
            });
    public static final MessageType<LeaseGranted> LEASE_GRANTED = MessageType.of(201, LeaseGranted.class,
            (m, out) -> {
                out.writeLong(m.leaseMillis());
                out.writeLong(m.heartbeatMillis());
                out.writeLong(m.routingVersion());
            },
            in -> new LeaseGranted(positive(in, "lease ms"), positive(in, "heartbeat ms"), Wire.readLong(in, "routing version")));
    public static final MessageType<Heartbeat> HEARTBEAT = MessageType.of(202, Heartbeat.class,
            (m, out) -> {
                out.writeInt(m.node().value());
                out.writeLong(m.incarnation());
                MgmtdCommand.encodeReports(m.reports(), out);
            },
            in -> new Heartbeat(NodeId.of(Wire.readInt(in, "node")), Wire.readLong(in, "incarnation"), MgmtdCommand.decodeReports(in)));
    public static final MessageType<GetRouting> GET_ROUTING = MessageType.of(203, GetRouting.class,
            (m, out) -> {
                out.writeLong(m.knownVersion());
                out.writeInt(m.waitMillis());
            },
            in -> new GetRouting(Wire.readLong(in, "known version"), Wire.readInt(in, "wait ms", 0, 600_000)));
    public static final MessageType<RoutingReply> ROUTING_REPLY = MessageType.of(204, RoutingReply.class,
            (m, out) -> RoutingCodec.encode(m.routing(), out),
            in -> new RoutingReply(RoutingCodec.decode(in)));
    public static final MessageType<GetStatus> GET_STATUS = MessageType.of(205, GetStatus.class,
            (m, out) -> { },
            in -> new GetStatus());
    public static final MessageType<ClusterStatus> CLUSTER_STATUS = MessageType.of(206, ClusterStatus.class,
            MgmtdMessages::encodeStatus, MgmtdMessages::decodeStatus);
    public static final MessageType<CreateChainTable> CREATE_CHAIN_TABLE = MessageType.of(207, CreateChainTable.class,
            (m, out) -> {
                out.writeInt(m.tableId());
                out.writeByte(m.replicas());
            },
            in -> {
                int id = Wire.readInt(in, "table id", 1, Integer.MAX_VALUE);
                int r = Wire.readU8(in, "replicas");
                if (r < 1 || r > 5) {
                    throw new Wire.Malformed("replicas out of range [1, 5]: " + r);
                }
                return new CreateChainTable(id, r);
            });
    public static final MessageType<ChainTableCreated> CHAIN_TABLE_CREATED = MessageType.of(208, ChainTableCreated.class,
            (m, out) -> {
                out.writeInt(m.tableId());
                out.writeInt(m.version());
                out.writeLong(m.routingVersion());
            },
            in -> new ChainTableCreated(Wire.readInt(in, "table id", 1, Integer.MAX_VALUE),
                    Wire.readInt(in, "table version", 1, Integer.MAX_VALUE), Wire.readLong(in, "routing version")));

    public static final List<MessageType<?>> TYPES = List.of(REGISTER_NODE, LEASE_GRANTED, HEARTBEAT, GET_ROUTING, ROUTING_REPLY,
            GET_STATUS, CLUSTER_STATUS, CREATE_CHAIN_TABLE, CHAIN_TABLE_CREATED);

    private MgmtdMessages() {
    }

    private static long positive(ByteBuf in, String what) {
        long v = Wire.readLong(in, what);
        if (v <= 0) {
            throw new Wire.Malformed(what + " must be positive, got " + v);
        }
        return v;
    }

    private static void encodeStatus(ClusterStatus s, ByteBuf out) {
        RoutingCodec.encode(s.routing(), out);
        out.writeInt(s.peers().size());
        for (PeerStatus p : s.peers()) {
            Wire.writeString(out, p.id());
            Wire.writeString(out, p.rpc());
            Wire.writeBool(out, p.leader());
        }
        out.writeInt(s.nodes().size());
        for (NodeStatus n : s.nodes()) {
            out.writeInt(n.node().value());
            Wire.writeEnum(out, n.role());
            out.writeLong(n.incarnation());
            Wire.writeBool(out, n.live());
            out.writeLong(n.leaseLeftMillis());
        }
        out.writeInt(s.targets().size());
        for (TargetStatus t : s.targets()) {
            out.writeLong(t.target().value());
            Wire.writeEnum(out, t.local());
        }
    }

    private static ClusterStatus decodeStatus(ByteBuf in) {
        var routing = RoutingCodec.decode(in);
        int p = Wire.readCount(in, "peers", 16, 9);
        List<PeerStatus> peers = new ArrayList<>();
        for (int i = 0; i < p; i++) {
            peers.add(new PeerStatus(Wire.readString(in, 256, "peer id"), Wire.readString(in, 1024, "peer rpc"), Wire.readBool(in, "leader")));
        }
        int n = Wire.readCount(in, "nodes", 1 << 20, 22);
        List<NodeStatus> nodes = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            nodes.add(new NodeStatus(NodeId.of(Wire.readInt(in, "node")), Wire.readEnum(in, NodeRole.class, "role"),
                    Wire.readLong(in, "incarnation"), Wire.readBool(in, "live"), Wire.readLong(in, "lease left")));
        }
        int t = Wire.readCount(in, "targets", 1 << 20, 9);
        List<TargetStatus> targets = new ArrayList<>();
        for (int i = 0; i < t; i++) {
            targets.add(new TargetStatus(TargetId.of(Wire.readLong(in, "target")), Wire.readEnum(in, LocalState.class, "local state")));
        }
        return new ClusterStatus(routing, peers, nodes, targets);
    }
}
