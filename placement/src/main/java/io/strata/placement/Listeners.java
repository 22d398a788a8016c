package io.strata.placement;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Consumer;

/**
 * The listeners of a value that changes. Each is told in the order it was added, on the caller's
 * thread; one that throws stops neither the others nor the caller.
 */
final class Listeners<T> {
    private final List<Consumer<T>> all = new CopyOnWriteArrayList<>();

    void add(Consumer<T> listener) {
        all.add(listener);
    }

    /** Tells every listener {@code value}; {@code failed} gets what each listener that threw threw (to log it). */
    void tell(T value, Consumer<RuntimeException> failed) {
        for (Consumer<T> l : all) {
            try {
                l.accept(value);
            } catch (RuntimeException e) {
                failed.accept(e);
            }
        }
    }
}
