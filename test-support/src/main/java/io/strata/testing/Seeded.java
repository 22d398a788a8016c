package io.strata.testing;

import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Gives a test method a {@code long seed} parameter: random unless {@code -Dstrata.seed=N} is set,
 * and printed when the test fails so that the run can be replayed exactly.
 *
 * <pre>{@code
 * @Seeded @Test void chaos(long seed) { ... new Random(seed) ... }
 * }</pre>
 */
@Target({ElementType.METHOD, ElementType.TYPE})
@Retention(RetentionPolicy.RUNTIME)
@ExtendWith(SeedExtension.class)
public @interface Seeded {
}
