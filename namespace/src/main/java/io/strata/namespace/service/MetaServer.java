package io.strata.namespace.service;

import io.strata.protocol.meta.MetaMessages;
import io.strata.config.ConfigNode;
import io.strata.core.NodeContext;
import io.strata.core.rpc.CoreMessages;
import io.strata.core.rpc.EchoService;
import io.strata.core.rpc.Protocol;
import io.strata.core.rpc.RpcServer;
import io.strata.namespace.ChainTables;
import io.strata.namespace.ChunkReclaimer;
import io.strata.namespace.MetaStore;
import io.strata.namespace.kv.KvStore;
import io.strata.store.AtomicFiles;
import io.strata.store.PrivateFiles;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.util.concurrent.CountDownLatch;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One meta service instance: its KV store, the {@link MetaStore} over it and the RPC server.
 * {@code strata meta --config FILE} runs one inside the CLI's daemon runtime; {@link #main}
 * runs one as a bare process (crash tests start it with {@code JavaProcess}).
 */
public final class MetaServer implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(MetaServer.class);

    private final KvStore store;
    private final MetaStore meta;
    private final RpcServer server;

    private MetaServer(KvStore store, MetaStore meta, RpcServer server) {
        this.store = store;
        this.meta = meta;
        this.server = server;
    }

    /**
     * Starts an instance. {@code tables} overrides the configured chain tables when not null (a
     * cluster manager's); {@code reclaimer} frees deleted files' chunks (null: keep them queued).
     */
    public static MetaServer start(NodeContext ctx, MetaConfig cfg, ChainTables tables, ChunkReclaimer reclaimer) {
        KvStore store = cfg.openStore(ctx.meters());
        MetaStore meta = null;
        try {
            meta = new MetaStore(ctx, store, tables != null ? tables : cfg.chainTables(), reclaimer, cfg.options());
            InetSocketAddress listen = new InetSocketAddress(cfg.node().listen().getHostString(), cfg.node().listen().getPort());
            RpcServer.Builder b = RpcServer.builder(ctx, MetaMessages.PROTOCOL).options(cfg.node().rpc());
            EchoService.register(ctx, b, 1 << 20);
            RpcServer server = MetaService.register(b, meta).bind(listen);
            if (cfg.chainTables().tables().isEmpty() && tables == null) {
                LOG.warn("{}: no chain tables configured ([[meta.chain-tables]]): file creation will fail until a cluster manager provides them", ctx.name());
            }
            if (reclaimer == null) {
                LOG.warn("{}: no data tier wired: deleted files stay queued for a collector that can free their chunks", ctx.name());
            }
            LOG.info("{}: meta service on {} ({} backend)", ctx.name(), server.address(), store.name());
            return new MetaServer(store, meta, server);
        } catch (RuntimeException e) {
            if (meta != null) {
                meta.close();
            }
            store.close();
            throw e;
        }
    }

    public InetSocketAddress address() {
        return server.address();
    }

    public MetaStore meta() {
        return meta;
    }

    @Override
    public void close() {
        server.close();
        meta.close();
        store.close();
    }

    /** {@code MetaServer --config FILE}: runs until killed; writes {@code <data>/meta.address} when ready. */
    public static void main(String[] args) throws IOException, InterruptedException {
        if (args.length != 2 || !args[0].equals("--config")) {
            System.err.println("usage: MetaServer --config FILE");
            System.exit(2);
        }
        ConfigNode root = ConfigNode.load(Path.of(args[1]));
        MetaConfig cfg = MetaConfig.read(root);
        root.rejectUnknownKeys();
        NodeContext ctx = NodeContext.builder(cfg.node().name()).transport(cfg.node().transport()).build();
        MetaServer s = start(ctx, cfg, null, null);
        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            s.close();
            ctx.close();
            stopped.countDown();
        }, "shutdown"));
        if (cfg.node().data() != null) {
            Path dir = PrivateFiles.createDirectories(cfg.node().data());
            AtomicFiles.plain().write(dir.resolve("meta.address"), s.address().getHostString() + ":" + s.address().getPort(), false);
        }
        stopped.await();
    }
}
