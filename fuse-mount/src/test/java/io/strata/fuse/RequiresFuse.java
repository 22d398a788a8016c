package io.strata.fuse;

import io.strata.testing.Fuse;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;
import java.util.Optional;
import org.junit.jupiter.api.extension.ConditionEvaluationResult;
import org.junit.jupiter.api.extension.ExecutionCondition;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.ExtensionContext;

/** Tagged {@code fuse}; skipped, with the reason printed, when /dev/fuse or the libfuse under test ({@link FuseUnderTest}) is missing. */
@Target({ElementType.TYPE, ElementType.METHOD})
@Retention(RetentionPolicy.RUNTIME)
@Fuse
@ExtendWith(RequiresFuse.Condition.class)
@interface RequiresFuse {
    final class Condition implements ExecutionCondition {
        @Override
        public ConditionEvaluationResult evaluateExecutionCondition(ExtensionContext context) {
            Optional<String> why = FuseMount.unavailable(FuseUnderTest.libfuse());
            if (why.isPresent()) {
                String msg = "skipped: FUSE is not available here: " + why.get();
                System.err.println("[strata] " + context.getDisplayName() + " " + msg);
                return ConditionEvaluationResult.disabled(msg);
            }
            return ConditionEvaluationResult.enabled("/dev/fuse and " + FuseUnderTest.libfuse().configName() + " are available");
        }
    }
}
