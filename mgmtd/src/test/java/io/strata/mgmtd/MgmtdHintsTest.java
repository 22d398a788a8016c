package io.strata.mgmtd;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.strata.core.NodeContext;
import io.strata.core.Status;
import io.strata.core.StrataException;
import io.strata.core.time.ManualClock;
import io.strata.core.util.Eventually;
import io.strata.core.util.Futures;
import io.strata.protocol.mgmtd.MgmtdClient;
import io.strata.protocol.mgmtd.MgmtdMessages;
import io.strata.protocol.mgmtd.StoredHint;
import io.strata.store.PrivateFiles;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Scheduler hints through a real {@link MgmtdClient} against one manager peer, and across its restart. */
class MgmtdHintsTest {
    static final Duration T = Duration.ofSeconds(10);

    @TempDir
    Path dir;
    NodeContext ctx;
    MgmtdServer server;
    MgmtdClient client;

    void start(long snapshotEvery) throws Exception {
        if (ctx == null) {
            ctx = Managers.ctx("mgmtd", new ManualClock(), 1);
        }
        server = MgmtdServer.start(ctx, MgmtdConfig.single(dir.resolve("m1"), Managers.loopback(0), Managers.loopback(0),
                Duration.ofSeconds(10)).withSnapshotEvery(snapshotEvery).withLeaseCheck(Duration.ofHours(1)));
        Eventually.await("leader", Duration.ofSeconds(20), server::isLeader);
        client = new MgmtdClient(ctx, List.of(server.rpcAddress()));
    }

    @AfterEach
    void tearDown() {
        if (client != null) {
            client.close();
        }
        if (server != null) {
            server.close();
        }
        if (ctx != null) {
            ctx.close();
        }
    }

    static byte[] json(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    static <T> T join(CompletableFuture<T> f) {
        return Futures.join(f, T);
    }

    static void assertFails(CompletableFuture<?> f, Status status, String message) {
        assertThatThrownBy(() -> join(f)).isInstanceOfSatisfying(StrataException.class, e -> {
            assertThat(e.status()).isEqualTo(status);
            assertThat(e.getMessage()).contains(message);
        });
    }

    @Test
    void createListGetReplaceConflictDelete() throws Exception {
        start(1000);
        long routing = server.routing().version();
        StoredHint a = join(client.putHintAsync(0, 0, json("{\"job\":\"a\",\"paths\":[\"/ckpt/7\"]}")));
        StoredHint b = join(client.putHintAsync(0, 0, json("{\"job\":\"b\"}")));
        assertThat(a).isEqualTo(new StoredHint(1, 1, json("{\"job\":\"a\",\"paths\":[\"/ckpt/7\"]}")));
        assertThat(b.id()).isEqualTo(2);
        assertThat(join(client.hintsAsync())).containsExactly(a, b);
        assertThat(join(client.hintAsync(2))).contains(b);
        assertThat(join(client.hintAsync(3))).isEmpty();

        StoredHint a2 = join(client.putHintAsync(1, 1, json("{\"job\":\"a\",\"progress\":0.5}")));
        assertThat(a2).isEqualTo(new StoredHint(1, 2, json("{\"job\":\"a\",\"progress\":0.5}")));
        assertThat(join(client.hintAsync(1))).contains(a2);
        assertFails(client.putHintAsync(1, 1, json("{}")), Status.TXN_CONFLICT, "hint 1 is at version 2, not 1");
        assertFails(client.putHintAsync(42, 1, json("{}")), Status.NOT_FOUND, "no hint 42");
        assertFails(client.putHintAsync(0, 0, new byte[StoredHint.MAX_VALUE_BYTES + 1]), Status.INVALID_ARGUMENT,
                Integer.toString(StoredHint.MAX_VALUE_BYTES + 1));

        assertFails(client.deleteHintAsync(1, 1), Status.TXN_CONFLICT, "hint 1 is at version 2, not 1");
        join(client.deleteHintAsync(1, 2));
        join(client.deleteHintAsync(2, 0));
        assertFails(client.deleteHintAsync(2, 0), Status.NOT_FOUND, "no hint 2");
        assertThat(join(client.hintsAsync())).isEmpty();
        assertThat(join(client.putHintAsync(0, 0, json("{}"))).id()).as("ids are never reused").isEqualTo(3);
        assertThat(server.routing().version()).as("hints are no routing change").isEqualTo(routing);
    }

    @Test
    void aListingFollowsPages() throws Exception {
        start(1000);
        // values large enough that the byte budget ends pages before the count does
        int size = MgmtdMessages.HINTS_PAGE_BYTES / 3 + 1;
        List<StoredHint> put = new ArrayList<>();
        for (int i = 0; i < 7; i++) {
            byte[] v = new byte[size];
            Arrays.fill(v, (byte) i);
            put.add(join(client.putHintAsync(0, 0, v)));
        }
        assertThat(join(client.hintsAsync())).isEqualTo(put);
        assertThat(join(client.hintAsync(7))).contains(put.get(6));
    }

    @Test
    void aRestartedManagerKeepsItsHints() throws Exception {
        start(4); // a snapshot every 4 entries: the restart loads one and replays the log after it
        for (int i = 0; i < 6; i++) {
            join(client.putHintAsync(0, 0, json("{\"n\":" + i + "}")));
        }
        join(client.putHintAsync(2, 1, json("{\"n\":\"two\"}")));
        join(client.deleteHintAsync(4, 0));
        join(client.putHintAsync(0, 0, json("{\"n\":6}")));
        List<StoredHint> before = join(client.hintsAsync());
        assertThat(before).extracting(StoredHint::id).containsExactly(1L, 2L, 3L, 5L, 6L, 7L);
        List<Path> snapshots;
        try (var files = Files.walk(dir)) {
            snapshots = files.filter(p -> p.getFileName().toString().matches("snapshot\\.\\d+_\\d+")).toList();
        }
        assertThat(snapshots).isNotEmpty().allSatisfy(p -> assertThat(Files.getPosixFilePermissions(p)).isEqualTo(PrivateFiles.FILE));
        client.close();
        server.close();
        start(4);
        Eventually.await("hints replayed", T, () -> server.hints().equals(before));
        assertThat(join(client.hintsAsync())).isEqualTo(before);
        assertThat(join(client.putHintAsync(0, 0, json("{}"))).id()).isEqualTo(8);
        assertThat(join(client.putHintAsync(2, 2, json("{}"))).version()).isEqualTo(3);
        assertThat(join(client.hintAsync(4))).isEqualTo(Optional.empty());
    }
}
