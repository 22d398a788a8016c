package io.strata.namespace;

import io.strata.protocol.meta.Layout;
import io.strata.core.ChainId;
import io.strata.core.InodeId;
import java.util.ArrayList;
import java.util.List;

/**
 * Chooses the chains of a new file's layout. The function is written here, specified in
 * docs/internals/keyspace.md ("Chain choice") and versioned: a layout records the version it
 * was made with, and a version's output never changes (golden values in ChainChooserTest).
 * Never a library shuffle (3FS #368: std::shuffle differed between compilers).
 *
 * <p>Version 1, for a table of {@code n} chains and a stripe width {@code w} (capped at n):
 * <ol>
 *   <li>{@code seed = splitmix64(inode ^ 0x5354524154410001)};</li>
 *   <li>{@code base = seed mod n} (unsigned);</li>
 *   <li>take the {@code w} consecutive table positions {@code base, base+1, ...} (mod n), which
 *       spreads files evenly over the table;</li>
 *   <li>shuffle them by Fisher-Yates from the last position down: with {@code state = seed},
 *       for {@code i = w-1 .. 1}: {@code state += 0x9E3779B97F4A7C15; r = mix(state) mod (i+1)};
 *       swap positions {@code i} and {@code r}.</li>
 * </ol>
 * where {@code splitmix64(x) = mix(x + 0x9E3779B97F4A7C15)} and {@code mix} is splitmix64's
 * finaliser ({@code z ^= z >>> 30; z *= 0xBF58476D1CE4E5B9; z ^= z >>> 27;
 * z *= 0x94D049BB133111EB; z ^= z >>> 31}).
 */
public final class ChainChooser {
    public static final int VERSION = 1;
    private static final long GOLDEN = 0x9E3779B97F4A7C15L;
    private static final long TAG_V1 = 0x5354524154410001L;

    private ChainChooser() {
    }

    /** The layout of a new file {@code inode} over {@code table}. */
    public static Layout choose(InodeId inode, ChainTables.Table table, int chunkSize, int stripeWidth) {
        int n = table.chains().size();
        int w = Math.max(1, Math.min(stripeWidth, n));
        long seed = splitmix64(inode.value() ^ TAG_V1);
        int base = (int) Long.remainderUnsigned(seed, n);
        int[] pos = positions(n, w, base, seed);
        List<ChainId> chains = new ArrayList<>(w);
        for (int p : pos) {
            chains.add(table.chains().get(p));
        }
        return new Layout(chunkSize, w, table.id(), table.version(), table.replicas(), VERSION, base, seed, chains);
    }

    /** Recomputes a layout's chains from its table, base and seed (audits; versions dispatch here). */
    public static List<ChainId> recompute(Layout layout, ChainTables.Table table) {
        if (layout.chooserVersion() != VERSION) {
            throw new IllegalArgumentException("unknown chain chooser version " + layout.chooserVersion());
        }
        int[] pos = positions(table.chains().size(), layout.stripeWidth(), layout.baseIndex(), layout.seed());
        List<ChainId> out = new ArrayList<>();
        for (int p : pos) {
            out.add(table.chains().get(p));
        }
        return out;
    }

    static int[] positions(int n, int w, int base, long seed) {
        int[] pos = new int[w];
        for (int j = 0; j < w; j++) {
            pos[j] = (int) ((base + (long) j) % n);
        }
        long state = seed;
        for (int i = w - 1; i >= 1; i--) {
            state += GOLDEN;
            int r = (int) Long.remainderUnsigned(mix(state), i + 1);
            int t = pos[i];
            pos[i] = pos[r];
            pos[r] = t;
        }
        return pos;
    }

    static long splitmix64(long x) {
        return mix(x + GOLDEN);
    }

    static long mix(long z) {
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }
}
