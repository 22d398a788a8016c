package io.strata.l1;

import io.strata.core.NodeContext;
import java.nio.file.Path;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.io.TempDir;

/**
 * The setting most L1 tests share: a temporary directory, a node context, and a {@link FileTier}
 * under {@code dir/below} standing for the tier below L1. Both are opened before each test, ahead
 * of the subclass's own {@code @BeforeEach}, and closed after it, once the subclass's
 * {@code @AfterEach} closed what it built on them.
 */
abstract class FileTierFixture {
    @TempDir
    Path dir;
    NodeContext ctx;
    FileTier below;

    private final String name;
    private final long seed;

    /** {@code name} and {@code seed} make the test's context ({@link NodeContext#seeded}). */
    FileTierFixture(String name, long seed) {
        this.name = name;
        this.seed = seed;
    }

    /** The test's context; a subclass that needs more (a manual clock, say) builds its own from the same name and seed. */
    NodeContext newContext(String name, long seed) {
        return NodeContext.seeded(name, seed);
    }

    @BeforeEach
    final void openBelow() {
        ctx = newContext(name, seed);
        below = new FileTier(dir.resolve("below"), false);
    }

    @AfterEach
    final void closeBelow() {
        below.close();
        ctx.close();
    }
}
