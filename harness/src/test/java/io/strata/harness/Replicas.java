package io.strata.harness;

import static org.assertj.core.api.Assertions.assertThat;

import io.strata.core.ChainId;
import io.strata.core.TargetId;
import io.strata.core.util.Futures;
import io.strata.l3.StorageClient;
import io.strata.protocol.storage.ChunkSummary;
import io.strata.protocol.routing.ChainInfo;
import io.strata.protocol.routing.RoutingInfo;
import java.time.Duration;
import java.util.List;

/** Checks shared by the cluster ITs: do all replicas of a chain hold the same chunks? */
final class Replicas {
    private Replicas() {
    }

    /**
     * Lists every chunk each target of every chain in {@code r} holds and asserts the lists are
     * identical (same chunks, same committed version, request, length, CRC32C, request memory; no
     * pending version anywhere). Returns the number of chunks compared.
     */
    static int assertIdentical(StorageClient client, RoutingInfo r) {
        int n = 0;
        for (ChainInfo c : r.chains().values()) {
            List<ChunkSummary> first = null;
            TargetId firstT = null;
            for (TargetId t : c.targets()) {
                List<ChunkSummary> list = Futures.join(client.listChunksAsync(c.id(), t, Duration.ofSeconds(20)), Duration.ofSeconds(30));
                for (ChunkSummary s : list) {
                    assertThat(s.pendingVersion()).as("%s on %s has no pending version left", s.id(), t).isZero();
                }
                if (first == null) {
                    first = list;
                    firstT = t;
                    n += list.size();
                    continue;
                }
                assertThat(list.size()).as("%s: %s and %s hold as many chunks", c.id(), firstT, t).isEqualTo(first.size());
                for (int i = 0; i < list.size(); i++) {
                    ChunkSummary a = first.get(i);
                    ChunkSummary b = list.get(i);
                    assertThat(b.sameAs(a)).as("%s: %s on %s is %s, on %s %s", c.id(), a.id(), firstT, a, t, b).isTrue();
                }
            }
        }
        return n;
    }

    static ChainId chain(int c) {
        return ChainId.of(c);
    }
}
