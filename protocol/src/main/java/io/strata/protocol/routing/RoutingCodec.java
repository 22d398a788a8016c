package io.strata.protocol.routing;

import io.netty.buffer.ByteBuf;
import io.strata.core.ChainId;
import io.strata.core.NodeId;
import io.strata.core.TargetId;
import io.strata.core.rpc.Wire;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The wire form of {@link RoutingInfo} (inside cluster-manager messages and snapshots). Layout:
 * u64 version; nodes (u32 count; each u32 id, string host, u16 port, u32 label count, label
 * key/value strings); targets (u32 count; u64 id, u32 node, u8 state tag); chains (u32 count;
 * u32 id, u64 version, u32 count, u64 target ids); tables (u32 count; u32 id, u32 version,
 * u8 replicas, u32 count, u32 chain ids); L2 agents (u32 count; u32 node, bool serving).
 * Decoding rechecks every reference. {@link #decodeWithoutAgents} reads the form before agents
 * existed (cluster-manager snapshots of format 1).
 */
public final class RoutingCodec {
    private static final int MAX_ITEMS = 1 << 20;

    private RoutingCodec() {
    }

    public static void encode(RoutingInfo r, ByteBuf out) {
        out.writeLong(r.version());
        out.writeInt(r.nodes().size());
        for (NodeInfo n : r.nodes().values()) {
            out.writeInt(n.id().value());
            Wire.writeString(out, n.host());
            out.writeShort(n.port());
            out.writeInt(n.labels().size());
            n.labels().forEach((k, v) -> {
                Wire.writeString(out, k);
                Wire.writeString(out, v);
            });
        }
        out.writeInt(r.targets().size());
        for (TargetInfo t : r.targets().values()) {
            out.writeLong(t.id().value());
            out.writeInt(t.node().value());
            Wire.writeEnum(out, t.state());
        }
        out.writeInt(r.chains().size());
        for (ChainInfo c : r.chains().values()) {
            out.writeInt(c.id().value());
            out.writeLong(c.version());
            out.writeInt(c.targets().size());
            c.targets().forEach(t -> out.writeLong(t.value()));
        }
        out.writeInt(r.tables().size());
        for (ChainTable t : r.tables()) {
            out.writeInt(t.id());
            out.writeInt(t.version());
            out.writeByte(t.replicas());
            out.writeInt(t.chains().size());
            t.chains().forEach(c -> out.writeInt(c.value()));
        }
        out.writeInt(r.agents().size());
        for (AgentInfo a : r.agents().values()) {
            out.writeInt(a.node().value());
            Wire.writeBool(out, a.serving());
        }
    }

    /** Routing without the agents section (the form of format-1 snapshots). */
    public static RoutingInfo decodeWithoutAgents(ByteBuf in) {
        return decode(in, false);
    }

    public static RoutingInfo decode(ByteBuf in) {
        return decode(in, true);
    }

    private static RoutingInfo decode(ByteBuf in, boolean withAgents) {
        try {
            long version = Wire.readLong(in, "routing version");
            Map<NodeId, NodeInfo> nodes = new HashMap<>();
            int n = Wire.readCount(in, "nodes", MAX_ITEMS, 10);
            for (int i = 0; i < n; i++) {
                NodeId id = NodeId.of(Wire.readInt(in, "node id"));
                String host = Wire.readString(in, 1024, "host");
                int port = Wire.readU16(in, "port");
                int labels = Wire.readCount(in, "labels", 64, 8);
                Map<String, String> l = new LinkedHashMap<>();
                for (int j = 0; j < labels; j++) {
                    l.put(Wire.readString(in, 256, "label key"), Wire.readString(in, 1024, "label value"));
                }
                nodes.put(id, new NodeInfo(id, host, port, l));
            }
            Map<TargetId, TargetInfo> targets = new HashMap<>();
            int t = Wire.readCount(in, "targets", MAX_ITEMS, 13);
            for (int i = 0; i < t; i++) {
                TargetId id = TargetId.of(Wire.readLong(in, "target id"));
                targets.put(id, new TargetInfo(id, NodeId.of(Wire.readInt(in, "target node")), Wire.readEnum(in, TargetState.class, "target state")));
            }
            Map<ChainId, ChainInfo> chains = new HashMap<>();
            int c = Wire.readCount(in, "chains", MAX_ITEMS, 16);
            for (int i = 0; i < c; i++) {
                ChainId id = ChainId.of(Wire.readInt(in, "chain id"));
                long v = Wire.readLong(in, "chain version");
                int k = Wire.readCount(in, "chain targets", 16, 8);
                List<TargetId> members = new ArrayList<>();
                for (int j = 0; j < k; j++) {
                    members.add(TargetId.of(Wire.readLong(in, "chain target")));
                }
                chains.put(id, new ChainInfo(id, v, members));
            }
            List<ChainTable> tables = new ArrayList<>();
            int tt = Wire.readCount(in, "chain tables", 1 << 16, 13);
            for (int i = 0; i < tt; i++) {
                int id = Wire.readInt(in, "table id");
                int v = Wire.readInt(in, "table version");
                int replicas = Wire.readU8(in, "table replicas");
                int k = Wire.readCount(in, "table chains", MAX_ITEMS, 4);
                List<ChainId> ids = new ArrayList<>();
                for (int j = 0; j < k; j++) {
                    ids.add(ChainId.of(Wire.readInt(in, "table chain")));
                }
                tables.add(new ChainTable(id, v, replicas, ids));
            }
            Map<NodeId, AgentInfo> agents = new HashMap<>();
            if (withAgents) {
                int a = Wire.readCount(in, "agents", MAX_ITEMS, 5);
                for (int i = 0; i < a; i++) {
                    NodeId id = NodeId.of(Wire.readInt(in, "agent node"));
                    agents.put(id, new AgentInfo(id, Wire.readBool(in, "agent serving")));
                }
            }
            return new RoutingInfo(version, nodes, targets, chains, tables, agents);
        } catch (IllegalArgumentException e) {
            throw new Wire.Malformed("routing info: " + e.getMessage());
        }
    }
}
