package io.strata.protocol.mgmtd;

import io.netty.buffer.ByteBuf;
import io.strata.core.NodeId;
import io.strata.core.TargetId;
import io.strata.core.rpc.CoreMessages;
import io.strata.core.rpc.MessageType;
import io.strata.core.rpc.Protocol;
import io.strata.core.rpc.Wire;
import io.strata.protocol.routing.RoutingCodec;
import io.strata.protocol.routing.LocalState;
import io.strata.protocol.mgmtd.MgmtdMessage.ChainTableCreated;
import io.strata.protocol.mgmtd.MgmtdMessage.ClusterStatus;
import io.strata.protocol.mgmtd.MgmtdMessage.CreateChainTable;
import io.strata.protocol.mgmtd.MgmtdMessage.GetRouting;
import io.strata.protocol.mgmtd.MgmtdMessage.GetStatus;
import io.strata.protocol.mgmtd.MgmtdMessage.DeleteHint;
import io.strata.protocol.mgmtd.MgmtdMessage.GetHints;
import io.strata.protocol.mgmtd.MgmtdMessage.Heartbeat;
import io.strata.protocol.mgmtd.MgmtdMessage.HintDeleted;
import io.strata.protocol.mgmtd.MgmtdMessage.HintPut;
import io.strata.protocol.mgmtd.MgmtdMessage.Hints;
import io.strata.protocol.mgmtd.MgmtdMessage.LeaseGranted;
import io.strata.protocol.mgmtd.MgmtdMessage.NodeStatus;
import io.strata.protocol.mgmtd.MgmtdMessage.PeerStatus;
import io.strata.protocol.mgmtd.MgmtdMessage.PutHint;
import io.strata.protocol.mgmtd.MgmtdMessage.RegisterNode;
import io.strata.protocol.mgmtd.MgmtdMessage.RoutingReply;
import io.strata.protocol.mgmtd.MgmtdMessage.GetRevoked;
import io.strata.protocol.mgmtd.MgmtdMessage.Revocation;
import io.strata.protocol.mgmtd.MgmtdMessage.RevokeToken;
import io.strata.protocol.mgmtd.MgmtdMessage.Revoked;
import io.strata.protocol.mgmtd.MgmtdMessage.TokenRevoked;
import io.strata.protocol.mgmtd.MgmtdMessage.TargetStatus;
import io.strata.protocol.mgmtd.MgmtdMessage.TargetSpace;
import io.strata.protocol.mgmtd.MgmtdMessage.GetSpace;
import io.strata.protocol.mgmtd.MgmtdMessage.Space;
import java.util.ArrayList;
import java.util.List;
import io.strata.protocol.routing.NodeInfo;
import java.util.Map;
import java.util.LinkedHashMap;

/** Wire types of {@link MgmtdMessage} (tags 200-299; docs/internals/placement.md lists the layouts). */
public final class MgmtdMessages {
    /** Most targets one node registers or reports. */
    public static final int MAX_TARGETS = 4096;
    /** Most hints one {@link Hints} page carries. */
    public static final int MAX_HINTS_PAGE = 1024;
    /**
     * The value bytes after which the manager ends a {@link Hints} page (a page always carries at
     * least one hint): a full page stays well inside the default RPC body limit (1 MiB).
     */
    public static final int HINTS_PAGE_BYTES = 512 * 1024;
    /**
     * Largest hint value a {@link PutHint} (or the manager's log entry) decodes: above what the
     * manager stores ({@link StoredHint#MAX_VALUE_BYTES}), so that an oversized value reaches the
     * manager and is refused with {@code INVALID_ARGUMENT} naming its size rather than failing to
     * decode. The RPC body limit bounds it as well.
     */
    public static final int MAX_PUT_HINT_BYTES = 1 << 20;

    public static final MessageType<RegisterNode> REGISTER_NODE = MessageType.of(200, RegisterNode.class,
            (m, out) -> {
                encodeNode(m.node(), out);
                Wire.writeEnum(out, m.role());
                out.writeLong(m.incarnation());
                out.writeInt(m.targets().size());
                m.targets().forEach(t -> out.writeLong(t.value()));
            },
            in -> {
                var node = decodeNode(in);
                NodeRole role = Wire.readEnum(in, NodeRole.class, "role");
                long inc = Wire.readLong(in, "incarnation");
                int k = Wire.readCount(in, "targets", MAX_TARGETS, 8);
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
                out.writeInt(m.drainingAgents());
            },
            in -> new LeaseGranted(positive(in, "lease ms"), positive(in, "heartbeat ms"), Wire.readLong(in, "routing version"),
                    Wire.readInt(in, "draining agents", 0, Integer.MAX_VALUE)));
    public static final MessageType<Heartbeat> HEARTBEAT = MessageType.of(202, Heartbeat.class,
            (m, out) -> {
                out.writeInt(m.node().value());
                out.writeLong(m.incarnation());
                encodeReports(m.reports(), out);
                out.writeInt(m.space().size());
                for (TargetSpace t : m.space()) {
                    out.writeLong(t.target().value());
                    out.writeLong(t.capacityBytes());
                    out.writeLong(t.freeBytes());
                    out.writeLong(t.device());
                }
                out.writeLong(m.drainBacklogBytes());
            },
            in -> {
                NodeId node = NodeId.of(Wire.readInt(in, "node"));
                long incarnation = Wire.readLong(in, "incarnation");
                List<TargetReport> reports = decodeReports(in);
                int n = Wire.readCount(in, "target spaces", MAX_TARGETS, 32);
                List<TargetSpace> space = new ArrayList<>(n);
                for (int i = 0; i < n; i++) {
                    TargetId t = TargetId.of(Wire.readLong(in, "target"));
                    long capacity = Wire.readLong(in, "capacity");
                    long free = Wire.readLong(in, "free");
                    long device = Wire.readLong(in, "device");
                    try {
                        space.add(new TargetSpace(t, capacity, free, device));
                    } catch (IllegalArgumentException e) {
                        throw new Wire.Malformed(e.getMessage());
                    }
                }
                long backlog = Wire.readLong(in, "drain backlog");
                if (backlog < 0) {
                    throw new Wire.Malformed("negative drain backlog " + backlog);
                }
                return new Heartbeat(node, incarnation, reports, space, backlog);
            });
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

    public static final MessageType<PutHint> PUT_HINT = MessageType.of(209, PutHint.class,
            (m, out) -> {
                out.writeLong(m.id());
                out.writeLong(m.expectedVersion());
                Wire.writeBytes(out, m.value());
            },
            in -> new PutHint(Wire.readLong(in, "hint id"), Wire.readLong(in, "expected version"),
                    Wire.readBytes(in, MAX_PUT_HINT_BYTES, "hint value")));
    public static final MessageType<HintPut> HINT_PUT = MessageType.of(210, HintPut.class,
            (m, out) -> {
                out.writeLong(m.id());
                out.writeLong(m.version());
            },
            in -> new HintPut(Wire.readLong(in, "hint id"), Wire.readLong(in, "hint version")));
    public static final MessageType<DeleteHint> DELETE_HINT = MessageType.of(211, DeleteHint.class,
            (m, out) -> {
                out.writeLong(m.id());
                out.writeLong(m.expectedVersion());
            },
            in -> new DeleteHint(Wire.readLong(in, "hint id"), Wire.readLong(in, "expected version")));
    public static final MessageType<HintDeleted> HINT_DELETED = MessageType.of(212, HintDeleted.class,
            (m, out) -> out.writeLong(m.id()),
            in -> new HintDeleted(Wire.readLong(in, "hint id")));
    public static final MessageType<GetHints> GET_HINTS = MessageType.of(213, GetHints.class,
            (m, out) -> {
                out.writeLong(m.fromId());
                out.writeInt(m.max());
            },
            in -> new GetHints(Wire.readLong(in, "from id"), Wire.readInt(in, "max hints")));
    public static final MessageType<Hints> HINTS = MessageType.of(214, Hints.class,
            (m, out) -> {
                out.writeInt(m.hints().size());
                m.hints().forEach(h -> encodeHint(h, out));
                Wire.writeBool(out, m.more());
            },
            in -> {
                int n = Wire.readCount(in, "hints", MAX_HINTS_PAGE, 20);
                List<StoredHint> hints = new ArrayList<>();
                for (int i = 0; i < n; i++) {
                    hints.add(decodeHint(in));
                }
                return new Hints(hints, Wire.readBool(in, "more"));
            });

    public static final MessageType<RevokeToken> REVOKE_TOKEN = MessageType.of(215, RevokeToken.class,
            (m, out) -> encodeRevocation(new Revocation(m.tokenId(), m.expiresAt()), out),
            in -> {
                Revocation r = decodeRevocation(in);
                return new RevokeToken(r.tokenId(), r.expiresAt());
            });
    public static final MessageType<TokenRevoked> TOKEN_REVOKED = MessageType.of(216, TokenRevoked.class,
            (m, out) -> out.writeInt(m.held()),
            in -> new TokenRevoked(Wire.readInt(in, "revocations held", 0, Revocation.MAX)));
    public static final MessageType<GetRevoked> GET_REVOKED = MessageType.of(217, GetRevoked.class,
            (m, out) -> { },
            in -> new GetRevoked());
    public static final MessageType<Revoked> REVOKED = MessageType.of(218, Revoked.class,
            (m, out) -> {
                out.writeInt(m.tokens().size());
                m.tokens().forEach(r -> encodeRevocation(r, out));
            },
            in -> {
                int n = Wire.readCount(in, "revocations", Revocation.MAX, 12 + 8);
                List<Revocation> rs = new ArrayList<>(n);
                for (int i = 0; i < n; i++) {
                    rs.add(decodeRevocation(in));
                }
                return new Revoked(rs);
            });

    public static final MessageType<GetSpace> GET_SPACE = MessageType.of(219, GetSpace.class,
            (m, out) -> { },
            in -> new GetSpace());
    public static final MessageType<Space> SPACE = MessageType.of(220, Space.class,
            (m, out) -> {
                out.writeLong(m.capacityBytes());
                out.writeLong(m.freeBytes());
                out.writeInt(m.reporting());
                out.writeInt(m.targets());
            },
            in -> {
                long capacity = Wire.readLong(in, "capacity");
                long free = Wire.readLong(in, "free");
                int targets0 = Wire.readInt(in, "reporting", 0, Integer.MAX_VALUE);
                int targets = Wire.readInt(in, "targets", 0, Integer.MAX_VALUE);
                if (capacity < 0 || free < 0 || free > capacity || targets0 > targets) {
                    throw new Wire.Malformed("space: free " + free + " of " + capacity + ", " + targets0 + " of " + targets + " targets");
                }
                return new Space(capacity, free, targets0, targets);
            });

    public static final List<MessageType<?>> TYPES = List.of(REGISTER_NODE, LEASE_GRANTED, HEARTBEAT, GET_ROUTING, ROUTING_REPLY,
            GET_STATUS, CLUSTER_STATUS, CREATE_CHAIN_TABLE, CHAIN_TABLE_CREATED, PUT_HINT, HINT_PUT, DELETE_HINT, HINT_DELETED,
            GET_HINTS, HINTS, REVOKE_TOKEN, TOKEN_REVOKED, GET_REVOKED, REVOKED, GET_SPACE, SPACE);

    /** What a cluster manager speaks: the core messages (ping) and the manager messages. */
    public static final Protocol PROTOCOL = Protocol.of(CoreMessages.TYPES, TYPES);

    private MgmtdMessages() {
    }

    /** A revocation: the token id as a string (32 hex digits), then until when, epoch seconds. */
    public static void encodeRevocation(Revocation r, ByteBuf out) {
        Wire.writeString(out, r.tokenId());
        out.writeLong(r.expiresAt());
    }

    public static Revocation decodeRevocation(ByteBuf in) {
        String id = Wire.readString(in, 32, "token id");
        long until = positive(in, "revoked until");
        try {
            return new Revocation(id, until);
        } catch (IllegalArgumentException e) {
            throw new Wire.Malformed(e.getMessage());
        }
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
            out.writeLong(t.capacityBytes());
            out.writeLong(t.freeBytes());
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
        int t = Wire.readCount(in, "targets", 1 << 20, 25);
        List<TargetStatus> targets = new ArrayList<>();
        for (int i = 0; i < t; i++) {
            TargetId id = TargetId.of(Wire.readLong(in, "target"));
            LocalState local = Wire.readEnum(in, LocalState.class, "local state");
            long capacity = Wire.readLong(in, "capacity");
            long free = Wire.readLong(in, "free");
            if (capacity < -1 || free < -1 || free > capacity) {
                throw new Wire.Malformed("target " + id + ": free " + free + " of capacity " + capacity);
            }
            targets.add(new TargetStatus(id, local, capacity, free));
        }
        return new ClusterStatus(routing, peers, nodes, targets);
    }

    /** A hint as {@link Hints} and the manager's snapshot carry it: u64 id, u64 version, u32 length + value. */
    public static void encodeHint(StoredHint h, ByteBuf out) {
        out.writeLong(h.id());
        out.writeLong(h.version());
        Wire.writeBytes(out, h.value());
    }

    public static StoredHint decodeHint(ByteBuf in) {
        return new StoredHint(Wire.readLong(in, "hint id"), Wire.readLong(in, "hint version"),
                Wire.readBytes(in, StoredHint.MAX_VALUE_BYTES, "hint value"));
    }

    public static void encodeNode(NodeInfo n, ByteBuf out) {
        out.writeInt(n.id().value());
        Wire.writeString(out, n.host());
        out.writeShort(n.port());
        out.writeInt(n.labels().size());
        new java.util.TreeMap<>(n.labels()).forEach((k, v) -> {
            Wire.writeString(out, k);
            Wire.writeString(out, v);
        });
    }

    public static NodeInfo decodeNode(ByteBuf in) {
        NodeId id = NodeId.of(Wire.readInt(in, "node id"));
        String host = Wire.readString(in, 1024, "host");
        int port = Wire.readU16(in, "port");
        int k = Wire.readCount(in, "labels", 64, 8);
        Map<String, String> labels = new LinkedHashMap<>();
        for (int i = 0; i < k; i++) {
            labels.put(Wire.readString(in, 256, "label key"), Wire.readString(in, 1024, "label value"));
        }
        try {
            return new NodeInfo(id, host, port, labels);
        } catch (IllegalArgumentException e) {
            throw new Wire.Malformed("node: " + e.getMessage());
        }
    }

    public static void encodeReports(List<TargetReport> reports, ByteBuf out) {
        out.writeInt(reports.size());
        for (TargetReport r : reports) {
            out.writeLong(r.target().value());
            Wire.writeEnum(out, r.local());
            out.writeLong(r.chainVersion());
        }
    }

    public static List<TargetReport> decodeReports(ByteBuf in) {
        int k = Wire.readCount(in, "reports", MAX_TARGETS, 17);
        List<TargetReport> out = new ArrayList<>();
        for (int i = 0; i < k; i++) {
            out.add(new TargetReport(TargetId.of(Wire.readLong(in, "target")), Wire.readEnum(in, LocalState.class, "local state"),
                    Wire.readLong(in, "chain version")));
        }
        return out;
    }
}
