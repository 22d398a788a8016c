package io.strata.mgmtd;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.strata.core.Status;
import io.strata.core.rpc.Wire;
import io.strata.store.AtomicFiles;
import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.util.concurrent.CompletableFuture;
import java.util.function.Consumer;
import org.apache.ratis.io.MD5Hash;
import org.apache.ratis.proto.RaftProtos.LogEntryProto;
import org.apache.ratis.protocol.Message;
import org.apache.ratis.protocol.RaftGroupId;
import org.apache.ratis.protocol.RaftGroupMemberId;
import org.apache.ratis.protocol.RaftPeerId;
import org.apache.ratis.server.RaftServer;
import org.apache.ratis.server.protocol.TermIndex;
import org.apache.ratis.server.storage.FileInfo;
import org.apache.ratis.server.storage.RaftStorage;
import org.apache.ratis.statemachine.StateMachineStorage;
import org.apache.ratis.statemachine.TransactionContext;
import org.apache.ratis.statemachine.impl.BaseStateMachine;
import org.apache.ratis.statemachine.impl.SimpleStateMachineStorage;
import org.apache.ratis.statemachine.impl.SingleFileSnapshotInfo;
import org.apache.ratis.thirdparty.com.google.protobuf.ByteString;
import org.apache.ratis.util.MD5FileUtil;

/**
 * The Ratis state machine of the cluster manager: decodes {@link MgmtdCommand}s from the log,
 * applies them to one {@link ClusterState} under a lock, and answers with the encoded
 * {@link ClusterState.Outcome}. Snapshots are the encoded state in one file
 * ({@link SimpleStateMachineStorage}: {@code snapshot.TERM_INDEX} plus an MD5), so a restart
 * loads the latest snapshot and replays the log after it. The snapshot file is written
 * crash-safely and privately ({@link AtomicFiles}, 0600); the MD5 file is Ratis's.
 */
final class MgmtdStateMachine extends BaseStateMachine {
    private final SimpleStateMachineStorage storage = new SimpleStateMachineStorage();
    private final ClusterState state = new ClusterState();
    private final Consumer<ClusterState.View> onChange;
    private final Consumer<RaftPeerId> onLeaderChange;

    MgmtdStateMachine(Consumer<ClusterState.View> onChange, Consumer<RaftPeerId> onLeaderChange) {
        this.onChange = onChange;
        this.onLeaderChange = onLeaderChange;
    }

    ClusterState.View view() {
        return state.view();
    }

    /** Under the state lock, for the leader's read-modify decisions (e.g. whether a heartbeat changes anything). */
    synchronized <T> T read(java.util.function.Function<ClusterState, T> f) {
        return f.apply(state);
    }

    @Override
    public void initialize(RaftServer server, RaftGroupId groupId, RaftStorage raftStorage) throws IOException {
        super.initialize(server, groupId, raftStorage);
        storage.init(raftStorage);
        reinitialize();
    }

    @Override
    public void reinitialize() throws IOException {
        load(storage.loadLatestSnapshot());
    }

    @Override
    public StateMachineStorage getStateMachineStorage() {
        return storage;
    }

    private synchronized void load(SingleFileSnapshotInfo snapshot) throws IOException {
        if (snapshot == null) {
            return;
        }
        File f = snapshot.getFile().getPath().toFile();
        MD5Hash md5 = snapshot.getFile().getFileDigest();
        if (md5 != null) {
            MD5FileUtil.verifySavedMD5(f, md5);
        }
        ByteBuf in = Unpooled.wrappedBuffer(Files.readAllBytes(f.toPath()));
        try {
            state.decode(in);
        } catch (Wire.Malformed e) {
            throw new IOException("cluster-manager snapshot " + f + " is corrupt: " + e.getMessage(), e);
        }
        setLastAppliedTermIndex(snapshot.getTermIndex());
        onChange.accept(state.view());
    }

    @Override
    public synchronized long takeSnapshot() throws IOException {
        TermIndex last = getLastAppliedTermIndex();
        File file = storage.getSnapshotFile(last.getTerm(), last.getIndex());
        ByteBuf out = Unpooled.buffer();
        try {
            state.encode(out);
            AtomicFiles.plain().write(file.toPath(), out, false);
        } finally {
            out.release();
        }
        MD5Hash md5 = MD5FileUtil.computeAndSaveMd5ForFile(file);
        storage.updateLatestSnapshot(new SingleFileSnapshotInfo(new FileInfo(file.toPath(), md5), last));
        return last.getIndex();
    }

    @Override
    public CompletableFuture<Message> applyTransaction(TransactionContext trx) {
        LogEntryProto entry = trx.getLogEntry();
        ByteString data = entry.getStateMachineLogEntry().getLogData();
        ClusterState.Outcome outcome;
        ClusterState.View after;
        synchronized (this) {
            long before = state.view().routing().version();
            try {
                MgmtdCommand c = MgmtdCommand.decode(Unpooled.wrappedBuffer(data.asReadOnlyByteBuffer()));
                outcome = state.apply(c);
            } catch (RuntimeException e) {
                // A bad entry must not stop the log: it is answered with an error on every peer alike.
                outcome = new ClusterState.Outcome(Status.INVALID_ARGUMENT, "bad command: " + e.getMessage(),
                        state.view().routing().version(), 0, 0);
            }
            updateLastAppliedTermIndex(entry.getTerm(), entry.getIndex());
            after = state.view().routing().version() != before ? state.view() : null;
        }
        if (after != null) {
            onChange.accept(after);
        }
        return CompletableFuture.completedFuture(Message.valueOf(ByteString.copyFrom(encodeOutcome(outcome))));
    }

    @Override
    public void notifyLeaderChanged(RaftGroupMemberId groupMemberId, RaftPeerId newLeaderId) {
        onLeaderChange.accept(newLeaderId);
    }

    static byte[] encodeOutcome(ClusterState.Outcome o) {
        ByteBuf b = Unpooled.buffer();
        try {
            b.writeShort(o.status().code());
            Wire.writeString(b, o.message());
            b.writeLong(o.routingVersion());
            b.writeLong(o.value());
            b.writeLong(o.version());
            byte[] out = new byte[b.readableBytes()];
            b.readBytes(out);
            return out;
        } finally {
            b.release();
        }
    }

    static ClusterState.Outcome decodeOutcome(ByteString bytes) {
        ByteBuf b = Unpooled.wrappedBuffer(bytes.toByteArray());
        return new ClusterState.Outcome(Status.fromCode(Wire.readU16(b, "status")), Wire.readString(b, 1 << 16, "message"),
                Wire.readLong(b, "routing version"), Wire.readLong(b, "value"), Wire.readLong(b, "version"));
    }
}
