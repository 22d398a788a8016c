package io.strata.cli;

import io.strata.store.AtomicFiles;
import io.strata.store.PrivateFiles;
import java.io.IOException;
import java.io.Reader;
import java.io.StringWriter;
import java.io.UncheckedIOException;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;

/**
 * The shape of a local cluster, fixed the first time {@code strata up} runs on a data directory
 * and kept in {@code DATA/cluster.properties}: how many storage nodes, replicas and targets per
 * node, and every daemon's port (picked free the first time). A restart reuses them, so the
 * cluster manager's Ratis peer, the meta service and the storage nodes come back on the
 * addresses their state was written with; the config files are written again from it.
 */
record UpLayout(Path data, int storageNodes, int replicas, int targets, int mgmtdRpc, int mgmtdRaft, int metaRpc,
                List<Integer> storageRpc, List<Integer> l2Rpc, int hooksHttp, Path mountDir) {
    static final String FILE = "cluster.properties";
    static final String HOST = "127.0.0.1";
    /** The node id the meta service registers with the manager under (storage nodes are 1..N). */
    static final int META_NODE_ID = 1000;
    /** L2 agent {@code i} registers as node {@code L2_NODE_ID + i}. */
    static final int L2_NODE_ID = 2000;

    /**
     * The layout recorded in {@code dir}, or a new one with free ports (recorded at once). Sizes
     * left null take the recorded ones (or 3 storage nodes, 3 replicas, 4 targets for a new one);
     * sizes given must match a recorded layout.
     */
    static UpLayout loadOrCreate(ClusterDir dir, Integer storageNodesOrNull, Integer replicasOrNull, Integer targetsOrNull, Path mountDir)
            throws IOException {
        return loadOrCreate(dir, storageNodesOrNull, replicasOrNull, targetsOrNull, null, mountDir);
    }

    /**
     * As above, with {@code l2AgentsOrNull} L2 agents (default 2 for a new cluster; a recorded
     * cluster keeps its count: an agent taken away could hold the only copies of staged bytes).
     */
    static UpLayout loadOrCreate(ClusterDir dir, Integer storageNodesOrNull, Integer replicasOrNull, Integer targetsOrNull,
                                 Integer l2AgentsOrNull, Path mountDir) throws IOException {
        Path f = dir.root.resolve(FILE);
        if (Files.exists(f)) {
            UpLayout l = read(dir.root, f);
            int storageNodes = storageNodesOrNull == null ? l.storageNodes : storageNodesOrNull;
            int replicas = replicasOrNull == null ? l.replicas : replicasOrNull;
            int targets = targetsOrNull == null ? l.targets : targetsOrNull;
            int agents = l2AgentsOrNull == null ? l.l2Rpc.size() : l2AgentsOrNull;
            if (l.storageNodes != storageNodes || l.replicas != replicas || l.targets != targets || l.l2Rpc.size() != agents) {
                throw new IllegalArgumentException(dir.root + " holds a cluster of " + l.storageNodes + " storage nodes, " + l.replicas
                        + " replicas, " + l.targets + " targets per node and " + l.l2Rpc.size()
                        + " L2 agents; start it with those (or use another --data)");
            }
            UpLayout m = mountDir == null ? l : new UpLayout(l.data, l.storageNodes, l.replicas, l.targets, l.mgmtdRpc, l.mgmtdRaft,
                    l.metaRpc, l.storageRpc, l.l2Rpc, l.hooksHttp, mountDir.toAbsolutePath().normalize());
            m.write();
            return m;
        }
        int storageNodes = storageNodesOrNull == null ? 3 : storageNodesOrNull;
        int replicas = replicasOrNull == null ? 3 : replicasOrNull;
        int targets = targetsOrNull == null ? 4 : targetsOrNull;
        if (replicas < 1 || replicas > 5 || storageNodes < replicas) {
            throw new IllegalArgumentException("need 1 <= --replicas <= 5 and at least as many storage nodes (got " + storageNodes
                    + " nodes, " + replicas + " replicas)");
        }
        if (targets < 1 || targets > 64) {
            throw new IllegalArgumentException("--targets must be between 1 and 64, got " + targets);
        }
        int agents = l2AgentsOrNull == null ? 2 : l2AgentsOrNull;
        if (agents < 0 || agents > 16) {
            throw new IllegalArgumentException("--l2-agents must be between 0 and 16, got " + agents);
        }
        List<Integer> ports = freePorts(4 + storageNodes + agents);
        UpLayout l = new UpLayout(dir.root, storageNodes, replicas, targets, ports.get(0), ports.get(1), ports.get(2),
                List.copyOf(ports.subList(3, 3 + storageNodes)), List.copyOf(ports.subList(3 + storageNodes, 3 + storageNodes + agents)),
                ports.get(ports.size() - 1), (mountDir != null ? mountDir : dir.root.resolve("mnt")).toAbsolutePath().normalize());
        l.write();
        return l;
    }

    /** The recorded layout, if {@code strata up} ever ran on {@code root}. */
    static java.util.Optional<UpLayout> find(Path root) {
        Path f = root.resolve(FILE);
        if (!Files.exists(f)) {
            return java.util.Optional.empty();
        }
        try {
            return java.util.Optional.of(read(root, f));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static UpLayout read(Path root, Path f) throws IOException {
        Properties p = new Properties();
        try (Reader r = Files.newBufferedReader(f)) {
            p.load(r);
        }
        int n = Integer.parseInt(p.getProperty("storage-nodes"));
        List<Integer> storage = new ArrayList<>();
        for (int i = 1; i <= n; i++) {
            storage.add(Integer.parseInt(p.getProperty("storage-" + i + ".rpc")));
        }
        List<Integer> l2 = new ArrayList<>();
        int agents = Integer.parseInt(p.getProperty("l2-agents", "0")); // clusters made before L2 existed have none
        for (int i = 1; i <= agents; i++) {
            l2.add(Integer.parseInt(p.getProperty("l2-" + i + ".rpc")));
        }
        return new UpLayout(root, n, Integer.parseInt(p.getProperty("replicas")), Integer.parseInt(p.getProperty("targets")),
                Integer.parseInt(p.getProperty("mgmtd.rpc")), Integer.parseInt(p.getProperty("mgmtd.raft")),
                Integer.parseInt(p.getProperty("meta.rpc")), storage, l2,
                // clusters made before the scheduler hooks existed get a port for them now
                p.containsKey("hooks.http") ? Integer.parseInt(p.getProperty("hooks.http")) : freePorts(1).get(0),
                Path.of(p.getProperty("mount.dir")));
    }

    private void write() throws IOException {
        Properties p = new Properties();
        p.setProperty("storage-nodes", String.valueOf(storageNodes));
        p.setProperty("replicas", String.valueOf(replicas));
        p.setProperty("targets", String.valueOf(targets));
        p.setProperty("mgmtd.rpc", String.valueOf(mgmtdRpc));
        p.setProperty("mgmtd.raft", String.valueOf(mgmtdRaft));
        p.setProperty("meta.rpc", String.valueOf(metaRpc));
        for (int i = 0; i < storageRpc.size(); i++) {
            p.setProperty("storage-" + (i + 1) + ".rpc", String.valueOf(storageRpc.get(i)));
        }
        p.setProperty("l2-agents", String.valueOf(l2Rpc.size()));
        for (int i = 0; i < l2Rpc.size(); i++) {
            p.setProperty("l2-" + (i + 1) + ".rpc", String.valueOf(l2Rpc.get(i)));
        }
        p.setProperty("hooks.http", String.valueOf(hooksHttp));
        p.setProperty("mount.dir", mountDir.toString());
        PrivateFiles.createDirectories(data);
        StringWriter w = new StringWriter();
        p.store(w, "the shape and ports of this local cluster (strata up keeps them across restarts)");
        AtomicFiles.plain().write(data.resolve(FILE), w.toString(), false);
    }

    /** Lowest port picked for a new cluster (below it: well-known and registered services). */
    static final int PORT_FLOOR = 20000;

    /**
     * {@code n} distinct free ports for a new cluster, below the kernel's ephemeral range
     * ({@code /proc/sys/net/ipv4/ip_local_port_range}). They are recorded and reused by every
     * restart, and an ephemeral port would be free game for any outgoing connection on the
     * machine while the cluster is down: a restart then failed with "Address already in use"
     * (seen in CI). When no such range is known or it leaves no room, any free port is taken.
     */
    static List<Integer> freePorts(int n) throws IOException {
        int top = ephemeralLow().orElse(0);
        if (top - PORT_FLOOR < 64 * n) {
            return anyFreePorts(n);
        }
        java.util.Random rnd = new java.util.Random();
        List<Integer> out = new ArrayList<>();
        for (int tries = 0; out.size() < n && tries < 1000; tries++) {
            int port = PORT_FLOOR + rnd.nextInt(top - PORT_FLOOR);
            if (!out.contains(port) && bindable(port)) {
                out.add(port);
            }
        }
        if (out.size() < n) {
            return anyFreePorts(n);
        }
        return out;
    }

    /**
     * The first port of the kernel's ephemeral range, when it can be read. Read line by line:
     * the file reports a size of 0, and {@code Files.readString} (JDK 25) then returned only its
     * first byte ("3" of "32768"), so every new cluster got ephemeral ports.
     */
    static java.util.OptionalInt ephemeralLow() {
        try (java.io.BufferedReader in = Files.newBufferedReader(Path.of("/proc/sys/net/ipv4/ip_local_port_range"))) {
            String line = in.readLine();
            if (line == null) {
                return java.util.OptionalInt.empty();
            }
            String[] r = line.trim().split("\\s+");
            return java.util.OptionalInt.of(Integer.parseInt(r[0]));
        } catch (IOException | RuntimeException e) {
            return java.util.OptionalInt.empty();
        }
    }

    private static boolean bindable(int port) {
        try (ServerSocket s = new ServerSocket()) {
            s.bind(new java.net.InetSocketAddress(java.net.InetAddress.getByName(HOST), port));
            return true;
        } catch (IOException e) {
            return false;
        }
    }

    private static List<Integer> anyFreePorts(int n) throws IOException {
        List<ServerSocket> held = new ArrayList<>();
        try {
            List<Integer> out = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                ServerSocket s = new ServerSocket(0, 50, java.net.InetAddress.getByName(HOST));
                held.add(s);
                out.add(s.getLocalPort());
            }
            return out;
        } finally {
            for (ServerSocket s : held) {
                s.close();
            }
        }
    }

    String mgmtdAddress() {
        return HOST + ":" + mgmtdRpc;
    }

    String metaAddress() {
        return HOST + ":" + metaRpc;
    }

    // ---- config files ----

    String mgmtdToml() {
        return """
                [node]
                name = "mgmtd"
                listen = "%s:%d"
                data = "%s"
                metrics = "127.0.0.1:0"

                [mgmtd]
                id = "m1"
                raft = "%s:%d"
                lease = "10s"
                heartbeat = "2s"
                auto-table-replicas = %d
                """.formatted(HOST, mgmtdRpc, esc(data.resolve("mgmtd")), HOST, mgmtdRaft, replicas);
    }

    String metaToml() {
        return """
                [node]
                name = "meta"
                listen = "%s:%d"
                data = "%s"
                metrics = "127.0.0.1:0"

                [meta]
                backend = "lmdb"
                [meta.lmdb]
                map-size = "8GiB"
                """.formatted(HOST, metaRpc, esc(data.resolve("meta")));
    }

    String storageToml(int i) {
        StringBuilder t = new StringBuilder();
        for (int k = 1; k <= targets; k++) {
            t.append("[[storage.targets]]\nid = ").append(i * 100 + k).append('\n');
        }
        return """
                [node]
                name = "storage-%d"
                listen = "%s:%d"
                data = "%s"
                metrics = "127.0.0.1:0"

                [storage]
                node-id = %d
                mgmtd = ["%s"]
                labels = { host = "storage-%d" }
                """.formatted(i, HOST, storageRpc.get(i - 1), esc(data.resolve("storage-" + i)), i, mgmtdAddress(), i) + t;
    }

    /**
     * L2 agent {@code i} (1-based): a compute node's spare NVMe, here a directory under the data
     * directory, each agent its own failure domain as if on its own node.
     */
    String l2Toml(int i) {
        return """
                [node]
                name = "l2-%d"
                listen = "%s:%d"
                data = "%s"
                metrics = "127.0.0.1:0"

                [l2]
                node-id = %d
                mgmtd = ["%s"]
                labels = { domain = "l2-%d", node = "l2-%d" }
                capacity = "4GiB"
                min-free = "1GiB"
                """.formatted(i, HOST, l2Rpc.get(i - 1), esc(data.resolve("l2-" + i)), L2_NODE_ID + i, mgmtdAddress(), i, i);
    }

    /** The scheduler hooks: the HTTP API on {@link #hooksHttp}, hints kept by the manager, a root client. */
    String hooksToml() {
        return """
                [node]
                name = "hooks"
                data = "%s"
                metrics = "127.0.0.1:0"

                [client]
                name = "hooks"
                meta = ["%s"]
                mgmtd = ["%s"]

                [hooks]
                listen = "%s:%d"
                mgmtd = ["%s"]
                """.formatted(esc(data.resolve("hooks")), metaAddress(), mgmtdAddress(), HOST, hooksHttp, mgmtdAddress());
    }

    /** What native client commands and tools read: where the manager and the meta service are. */
    String clientToml() {
        return """
                [client]
                name = "client"
                meta = ["%s"]
                mgmtd = ["%s"]
                """.formatted(metaAddress(), mgmtdAddress());
    }

    String mountToml(boolean l1, io.strata.fuse.MountOptions.Libfuse libfuse) {
        String cache = !l1 ? "" : """

                [l1]
                name = "mount-l1"
                memory = "128MiB"
                [l1.nvme]
                dir = "%s"
                capacity = "2GiB"
                min-free = "1GiB"
                """.formatted(esc(data.resolve("mount").resolve("l1-cache")));
        return """
                [node]
                name = "mount"
                data = "%s"
                metrics = "127.0.0.1:0"

                [client]
                name = "mount"
                meta = ["%s"]
                mgmtd = ["%s"]

                [mount]
                dir = "%s"
                fuse = "%s"
                """.formatted(esc(data.resolve("mount")), metaAddress(), mgmtdAddress(), esc(mountDir), libfuse.configName()) + cache;
    }

    private static String esc(Path p) {
        return p.toString().replace("\\", "\\\\").replace("\"", "\\\"");
    }
}
