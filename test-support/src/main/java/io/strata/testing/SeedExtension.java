package io.strata.testing;

import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.ParameterContext;
import org.junit.jupiter.api.extension.ParameterResolver;
import org.junit.jupiter.api.extension.TestExecutionExceptionHandler;

/** Resolves {@code long seed} parameters and adds the seed to a failing test's error. */
public final class SeedExtension implements ParameterResolver, TestExecutionExceptionHandler {
    private static final ExtensionContext.Namespace NS = ExtensionContext.Namespace.create(SeedExtension.class);

    @Override
    public boolean supportsParameter(ParameterContext p, ExtensionContext e) {
        return p.getParameter().getType() == long.class && p.getParameter().getName().equals("seed");
    }

    @Override
    public Object resolveParameter(ParameterContext p, ExtensionContext e) {
        return e.getStore(NS).computeIfAbsent("seed", k -> Seeds.pick(), Long.class);
    }

    @Override
    public void handleTestExecutionException(ExtensionContext e, Throwable t) throws Throwable {
        Long seed = e.getStore(NS).get("seed", Long.class);
        if (seed != null) {
            String msg = "seed " + seed + ": replay with -Dstrata.seed=" + seed + " -Dtest=" + e.getRequiredTestClass().getSimpleName()
                    + "#" + e.getRequiredTestMethod().getName();
            System.err.println("[strata] " + e.getDisplayName() + " failed with " + msg);
            t.addSuppressed(new AssertionError(msg));
        }
        throw t;
    }
}
