package io.strata.testing;

import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;
import org.junit.jupiter.api.Tag;

/** Tests that mount a real FUSE file system: need /dev/fuse and libfuse2 (Debian {@code fuse libfuse2}); skipped with the reason printed when either is missing. */
@Target({ElementType.TYPE, ElementType.METHOD})
@Retention(RetentionPolicy.RUNTIME)
@Tag("fuse")
public @interface Fuse {
}
