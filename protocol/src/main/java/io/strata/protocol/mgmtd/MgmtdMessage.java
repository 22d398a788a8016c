package io.strata.protocol.mgmtd;

import io.strata.core.NodeId;
import io.strata.core.TargetId;
import io.strata.core.rpc.Message;
import io.strata.protocol.routing.NodeInfo;
import io.strata.protocol.routing.RoutingInfo;
import io.strata.protocol.routing.LocalState;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;

/**
 * The cluster manager's RPC messages (wire tags 200-299, {@link MgmtdMessages}). Requests that
 * change or read cluster state are answered by the Ratis leader only; any other manager peer
 * answers {@code NOT_LEADER} with the leader's RPC address, which {@link MgmtdClient} follows.
 */
public sealed interface MgmtdMessage extends Message {
    /** A node (re)joins: its address, labels, role, process incarnation and targets. */
    record RegisterNode(NodeInfo node, NodeRole role, long incarnation, List<TargetId> targets) implements MgmtdMessage {
        public RegisterNode {
            targets = List.copyOf(targets);
        }
    }

    /**
     * Answer to {@link RegisterNode} and {@link Heartbeat}: the lease granted and when to heartbeat
     * next, and how many serving L2 agents reported a drain backlog in their last heartbeat (this
     * node's heartbeat counted), for their shares of the cluster's drain budget.
     */
    record LeaseGranted(long leaseMillis, long heartbeatMillis, long routingVersion, int drainingAgents) implements MgmtdMessage {
        public LeaseGranted {
            if (drainingAgents < 0) {
                throw new IllegalArgumentException("draining agents " + drainingAgents);
            }
        }

        public LeaseGranted(long leaseMillis, long heartbeatMillis, long routingVersion) {
            this(leaseMillis, heartbeatMillis, routingVersion, 0);
        }
    }

    /**
     * Renews the node's lease and carries each target's local state and, from storage nodes, each
     * target's disk space, and from L2 agents the bytes they are draining to L3 (0: none). Space
     * and backlogs are kept by the leader in memory only (they change all the time; a new leader
     * has them again after one heartbeat interval), never in the replicated state.
     */
    record Heartbeat(NodeId node, long incarnation, List<TargetReport> reports, List<TargetSpace> space, long drainBacklogBytes)
            implements MgmtdMessage {
        public Heartbeat {
            reports = List.copyOf(reports);
            space = List.copyOf(space);
            if (drainBacklogBytes < 0) {
                throw new IllegalArgumentException("drain backlog " + drainBacklogBytes);
            }
        }

        public Heartbeat(NodeId node, long incarnation, List<TargetReport> reports, List<TargetSpace> space) {
            this(node, incarnation, reports, space, 0);
        }

        /** A heartbeat that reports no disk space (L2 agents, meta services). */
        public Heartbeat(NodeId node, long incarnation, List<TargetReport> reports) {
            this(node, incarnation, reports, List.of());
        }
    }

    /**
     * One target's disk as its node sees it: the capacity of the file system holding the target's
     * directory (the bytes in use there plus the bytes still usable, so that a root-only reserve
     * counts for nothing, as in {@code df}'s use percentage) and the bytes usable there for chunks. {@code device} (the file system's device
     * number) tells targets that share one file system, whose space must be counted once, from
     * targets that do not.
     */
    record TargetSpace(TargetId target, long capacityBytes, long freeBytes, long device) {
        public TargetSpace {
            if (capacityBytes < 0 || freeBytes < 0 || freeBytes > capacityBytes) {
                throw new IllegalArgumentException("target " + target + ": free " + freeBytes + " of capacity " + capacityBytes);
            }
        }
    }

    /**
     * Asks for routing info newer than {@code knownVersion}. With {@code waitMillis} 0 it answers
     * at once (pull); otherwise it waits up to that long for a newer version (the push channel:
     * a long poll that the caller renews as soon as it returns).
     */
    record GetRouting(long knownVersion, int waitMillis) implements MgmtdMessage {
    }

    /** Routing info (encoded with {@link io.strata.protocol.routing.RoutingCodec}). */
    record RoutingReply(RoutingInfo routing) implements MgmtdMessage {
    }

    /** Admin: the whole cluster state. */
    record GetStatus() implements MgmtdMessage {
    }

    /** One manager peer as the leader sees it. */
    record PeerStatus(String id, String rpc, boolean leader) {
    }

    /** One node's lease as the leader sees it ({@code leaseLeftMillis} &lt; 0 when none is running). */
    record NodeStatus(NodeId node, NodeRole role, long incarnation, boolean live, long leaseLeftMillis) {
    }

    /**
     * One target's local state and disk space ({@code capacityBytes} and {@code freeBytes} are -1
     * when its node has not reported them to this leader yet, or reports none).
     */
    record TargetStatus(TargetId target, LocalState local, long capacityBytes, long freeBytes) {
        /** A target whose space is unknown. */
        public TargetStatus(TargetId target, LocalState local) {
            this(target, local, -1, -1);
        }

        public boolean spaceKnown() {
            return capacityBytes >= 0;
        }
    }

    /** Answer to {@link GetStatus}. */
    record ClusterStatus(RoutingInfo routing, List<PeerStatus> peers, List<NodeStatus> nodes, List<TargetStatus> targets)
            implements MgmtdMessage {
        public ClusterStatus {
            peers = List.copyOf(peers);
            nodes = List.copyOf(nodes);
            targets = List.copyOf(targets);
        }
    }

    /** Asks for the storage capacity of the cluster ({@link Space}). */
    record GetSpace() implements MgmtdMessage {
    }

    /**
     * Answer to {@link GetSpace}: the raw capacity and free bytes of the file systems under the
     * serving targets of live storage nodes, each file system counted once (targets of one node
     * host on one device share it). Replication is not taken off: a client divides by the
     * replica count it writes with. {@code reporting} of {@code targets} serving targets had
     * reported their space.
     */
    record Space(long capacityBytes, long freeBytes, int reporting, int targets) implements MgmtdMessage {
    }

    /** Admin: build a new version of chain table {@code tableId} from the free targets. */
    record CreateChainTable(int tableId, int replicas) implements MgmtdMessage {
    }

    /** Answer to {@link CreateChainTable}. */
    record ChainTableCreated(int tableId, int version, long routingVersion) implements MgmtdMessage {
    }

    /**
     * Stores a scheduler hint ({@link StoredHint}). {@code id} 0 creates a hint under the next id
     * at version 1 ({@code expectedVersion} is not looked at); a positive {@code id} replaces that
     * hint's value if it is at {@code expectedVersion} ({@code TXN_CONFLICT} otherwise,
     * {@code NOT_FOUND} if there is no such hint). Refused with {@code INVALID_ARGUMENT} when the
     * value exceeds {@link StoredHint#MAX_VALUE_BYTES}, with {@code NO_SPACE} when the store is full.
     */
    record PutHint(long id, long expectedVersion, byte[] value) implements MgmtdMessage {
        public PutHint {
            Objects.requireNonNull(value, "value");
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof PutHint p && p.id == id && p.expectedVersion == expectedVersion && Arrays.equals(p.value, value);
        }

        @Override
        public int hashCode() {
            return (Long.hashCode(id) * 31 + Long.hashCode(expectedVersion)) * 31 + Arrays.hashCode(value);
        }

        @Override
        public String toString() {
            return "PutHint[id=" + id + ", expectedVersion=" + expectedVersion + ", " + value.length + " bytes]";
        }
    }

    /** Answer to {@link PutHint}: the hint's id (new if it was created) and its version now. */
    record HintPut(long id, long version) implements MgmtdMessage {
    }

    /**
     * Deletes a scheduler hint: unconditionally with {@code expectedVersion} 0, otherwise only if
     * it is at that version ({@code TXN_CONFLICT}); {@code NOT_FOUND} if there is no such hint.
     */
    record DeleteHint(long id, long expectedVersion) implements MgmtdMessage {
    }

    /** Answer to {@link DeleteHint}. */
    record HintDeleted(long id) implements MgmtdMessage {
    }

    /**
     * Reads the scheduler hints with ids from {@code fromId} on, in id order: at most {@code max}
     * (the manager caps it at {@link MgmtdMessages#MAX_HINTS_PAGE}, and ends a page early once its
     * values pass {@link MgmtdMessages#HINTS_PAGE_BYTES}).
     */
    record GetHints(long fromId, int max) implements MgmtdMessage {
    }

    /** Answer to {@link GetHints}; {@code more} when hints follow the last one. */
    record Hints(List<StoredHint> hints, boolean more) implements MgmtdMessage {
        public Hints {
            hints = List.copyOf(hints);
        }
    }

    /**
     * Admin: token {@code tokenId} (32 hex digits, {@link io.strata.core.auth.Token#id()}) is
     * refused from now on by every daemon that learns the list, until {@code expiresAt} (epoch
     * seconds: when the token expires anyway; {@link Revocation#FOR_GOOD} when not known).
     */
    record RevokeToken(String tokenId, long expiresAt) implements MgmtdMessage {
        public RevokeToken {
            Revocation.checkId(tokenId);
        }
    }

    /** Answer to {@link RevokeToken}: how many revocations the manager holds now. */
    record TokenRevoked(int held) implements MgmtdMessage {
    }

    /** The revoked tokens that have not expired yet. Any role may ask: daemons poll it. */
    record GetRevoked() implements MgmtdMessage {
    }

    /** Answer to {@link GetRevoked}, in token id order. */
    record Revoked(List<Revocation> tokens) implements MgmtdMessage {
        public Revoked {
            tokens = List.copyOf(tokens);
        }
    }

    /** One revoked token: its id, and until when it is kept (epoch seconds). */
    record Revocation(String tokenId, long expiresAt) {
        /** Kept until an operator's cluster is gone: the token's expiry was not given. */
        public static final long FOR_GOOD = Long.MAX_VALUE;
        /** Most revocations the manager holds: a revoked token leaves the list when it expires. */
        public static final int MAX = 10_000;

        public Revocation {
            checkId(tokenId);
        }

        static void checkId(String id) {
            if (id == null || !id.matches("[0-9a-f]{32}")) {
                throw new IllegalArgumentException("a token id is 32 lowercase hex digits, got '" + id + "'");
            }
        }
    }
}
