package io.strata.harness;

import io.strata.protocol.routing.ChainInfo;
import io.strata.protocol.routing.ChainTable;
import io.strata.protocol.routing.NodeInfo;
import io.strata.protocol.routing.RoutingInfo;
import io.strata.protocol.routing.TargetInfo;
import java.util.Map;
import java.util.stream.Collectors;

/** Routing info written as the {@code [routing]} table {@code StaticRoutingSource.fromConfig} reads. */
public final class RoutingToml {
    private RoutingToml() {
    }

    public static String of(RoutingInfo r) {
        StringBuilder s = new StringBuilder();
        s.append("[routing]\nversion = ").append(r.version()).append('\n');
        for (NodeInfo n : r.nodes().values()) {
            s.append("[[routing.nodes]]\nid = ").append(n.id().value()).append("\naddress = \"").append(n.hostPort()).append('"');
            if (!n.labels().isEmpty()) {
                s.append("\nlabels = { ").append(n.labels().entrySet().stream().sorted(Map.Entry.comparingByKey())
                        .map(e -> e.getKey() + " = \"" + e.getValue() + "\"").collect(Collectors.joining(", "))).append(" }");
            }
            s.append('\n');
        }
        for (TargetInfo t : r.targets().values()) {
            s.append("[[routing.targets]]\nid = ").append(t.id().value()).append("\nnode = ").append(t.node().value())
                    .append("\nstate = \"").append(t.state().publicName()).append("\"\n");
        }
        for (ChainInfo c : r.chains().values()) {
            s.append("[[routing.chains]]\nid = ").append(c.id().value()).append("\nversion = ").append(c.version())
                    .append("\ntargets = ").append(c.targets().stream().map(t -> String.valueOf(t.value())).toList()).append('\n');
        }
        for (ChainTable t : r.tables()) {
            s.append("[[routing.tables]]\nid = ").append(t.id()).append("\nversion = ").append(t.version()).append("\nchains = ")
                    .append(t.chains().stream().map(c -> String.valueOf(c.value())).toList()).append('\n');
        }
        return s.toString();
    }

    /** The {@code [[meta.chain-tables]]} entries matching the routing's chain tables. */
    public static String metaChainTables(RoutingInfo r) {
        StringBuilder s = new StringBuilder();
        for (ChainTable t : r.tables()) {
            s.append("[[meta.chain-tables]]\nid = ").append(t.id()).append("\nversion = ").append(t.version())
                    .append("\nreplicas = ").append(t.replicas()).append("\nchains = ")
                    .append(t.chains().stream().map(c -> String.valueOf(c.value())).toList()).append('\n');
        }
        return s.toString();
    }
}
