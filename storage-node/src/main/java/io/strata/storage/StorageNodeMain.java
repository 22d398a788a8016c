package io.strata.storage;

import io.strata.core.NodeContext;
import io.strata.core.buffer.LeakTracker;
import io.strata.core.fault.Fault;
import io.strata.core.fault.FaultInjector;
import io.strata.core.fault.FaultPoint;
import io.strata.store.AtomicFiles;
import io.strata.store.PrivateFiles;
import java.io.IOException;
import java.io.StringWriter;
import java.nio.file.Path;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A storage node as a bare process: {@code StorageNodeMain --config FILE [--crash-at POINT:N]}.
 * Writes {@code <node.data>/ready.properties} (pid, rpc address) once serving (for a node routed
 * by the cluster manager: once registered), and stops on
 * SIGTERM. Crash tests start it with {@link io.strata.core.util.JavaProcess} and kill it;
 * {@code --crash-at chunk.data-write:5} halts the process (as kill -9 would) the 5th time that
 * fault point fires. The operator's entry point is {@code strata storage --config FILE}.
 */
public final class StorageNodeMain {
    private StorageNodeMain() {
    }

    public static void main(String[] args) throws Exception {
        LeakTracker.install();
        Path config = null;
        String crashAt = null;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--config" -> config = Path.of(args[++i]);
                case "--crash-at" -> crashAt = args[++i];
                default -> {
                    System.err.println("usage: StorageNodeMain --config FILE [--crash-at POINT:N]");
                    System.exit(2);
                }
            }
        }
        if (config == null) {
            System.err.println("usage: StorageNodeMain --config FILE [--crash-at POINT:N]");
            System.exit(2);
        }
        StorageDaemonConfig cfg = StorageDaemonConfig.load(config);
        FaultInjector faults = new FaultInjector(ProcessHandle.current().pid());
        if (crashAt != null) {
            int colon = crashAt.lastIndexOf(':');
            FaultPoint point = FaultPoint.of(crashAt.substring(0, colon));
            int nth = Integer.parseInt(crashAt.substring(colon + 1));
            AtomicInteger seen = new AtomicInteger();
            faults.arm(point, new Fault.Crash()).when(s -> seen.incrementAndGet() == nth);
        }
        NodeContext ctx = NodeContext.builder(cfg.node().name()).transport(cfg.node().transport()).faults(faults).build();
        StorageNode node = cfg.start(ctx);
        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            node.close();
            ctx.close();
            stopped.countDown();
        }, "shutdown"));
        Path data = cfg.node().requireData();
        // a managed node is ready once the cluster manager granted it a lease (registration retries until then)
        node.registered().thenRun(() -> {
            try {
                announceReady(data, node.address().getHostString() + ":" + node.address().getPort());
            } catch (IOException e) {
                System.err.println("cannot write the ready file: " + e);
                Runtime.getRuntime().halt(1);
            }
        });
        stopped.await();
    }

    /** Writes {@code dir/ready.properties} atomically and privately (the format {@code strata up} reads). */
    static void announceReady(Path dir, String rpc) throws IOException {
        PrivateFiles.createDirectories(dir);
        Properties p = new Properties();
        p.setProperty("pid", String.valueOf(ProcessHandle.current().pid()));
        p.setProperty("rpc", rpc);
        StringWriter w = new StringWriter();
        p.store(w, "written when the storage node is ready");
        AtomicFiles.plain().write(dir.resolve("ready.properties"), w.toString(), false);
    }
}
