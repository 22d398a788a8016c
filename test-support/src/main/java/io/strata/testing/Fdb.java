package io.strata.testing;

import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;
import org.junit.jupiter.api.Tag;

/** Tests against a real FoundationDB cluster: run when {@code FDB_CLUSTER_FILE} names a cluster file, skipped with that reason printed otherwise. */
@Target({ElementType.TYPE, ElementType.METHOD})
@Retention(RetentionPolicy.RUNTIME)
@Tag("fdb")
public @interface Fdb {
}
