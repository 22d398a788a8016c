package io.strata.namespace.kv;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.strata.testing.Fdb;
import java.util.concurrent.ThreadLocalRandom;
import org.junit.jupiter.api.BeforeAll;

/**
 * The conformance suite against a real FoundationDB cluster. Runs when {@code FDB_CLUSTER_FILE}
 * names a cluster file (and libfdb_c is installed); skipped with that reason otherwise. Each test
 * works under its own random key prefix and clears it afterwards.
 */
@Fdb
class FdbKvStoreTest extends KvConformanceTest {
    static final String REASON = "FoundationDB tests skipped: set FDB_CLUSTER_FILE to a cluster file (and install libfdb_c) to run them";

    @BeforeAll
    static void needsACluster() {
        String file = System.getenv("FDB_CLUSTER_FILE");
        if (file == null || file.isBlank()) {
            System.out.println("[strata] " + REASON);
        }
        assumeTrue(file != null && !file.isBlank(), REASON);
    }

    @Override
    protected KvStore open() {
        byte[] prefix = ("strata-test-" + Long.toHexString(ThreadLocalRandom.current().nextLong()) + "/").getBytes();
        FdbKvStore s = FdbKvStore.open(System.getenv("FDB_CLUSTER_FILE"), prefix, null);
        return new KvStore() {
            @Override
            public String name() {
                return s.name();
            }

            @Override
            public KvTransaction begin() {
                return s.begin();
            }

            @Override
            public void close() {
                s.run(tx -> {
                    tx.clearRange(new byte[] {0x00}, new byte[] {(byte) 0xFF});
                    return null;
                });
                s.close();
            }
        };
    }
}
