package io.strata.hooks;

import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.PropertyNamingStrategies;
import io.strata.core.Status;
import io.strata.core.StrataException;
import io.strata.core.util.Futures;
import io.strata.protocol.mgmtd.MgmtdClient;
import io.strata.protocol.mgmtd.StoredHint;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.UnaryOperator;

/**
 * The hints as the cluster manager keeps them: one versioned JSON blob each, replicated by Ratis,
 * so the hooks server holds no state of its own. Every change is a compare-and-set on the
 * version; a conflict (another writer got there first) re-reads and applies the change again.
 */
final class HintStore {
    static final ObjectMapper JSON = new ObjectMapper()
            .setPropertyNamingStrategy(PropertyNamingStrategies.SNAKE_CASE)
            .configure(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES, false);

    /** A hint and the version the manager holds it at. */
    record Versioned(Hint hint, long version) {
    }

    private final MgmtdClient mgmtd;
    private final Duration timeout;

    HintStore(MgmtdClient mgmtd, Duration timeout) {
        this.mgmtd = mgmtd;
        this.timeout = timeout;
    }

    /** Stores a new hint; the manager gives it its id. */
    Versioned create(Hint h) {
        StoredHint s = Futures.join(mgmtd.putHintAsync(0, 0, encode(h)), timeout);
        return new Versioned(h.withId(s.id()), s.version());
    }

    /** Applies {@code change} to the newest stored version (again after a conflict); empty when the hint is gone. */
    Optional<Versioned> update(long id, UnaryOperator<Hint> change) {
        for (int attempt = 0; ; attempt++) {
            Optional<Versioned> now = get(id);
            if (now.isEmpty()) {
                return now;
            }
            Hint next = change.apply(now.get().hint());
            if (next.equals(now.get().hint())) {
                return now;
            }
            try {
                StoredHint s = Futures.join(mgmtd.putHintAsync(id, now.get().version(), encode(next)), timeout);
                return Optional.of(new Versioned(next, s.version()));
            } catch (StrataException e) {
                if (e.status() == Status.NOT_FOUND) {
                    return Optional.empty();
                }
                if (e.status() != Status.TXN_CONFLICT || attempt >= 8) {
                    throw e;
                }
            }
        }
    }

    /**
     * Replaces {@code v} with {@code next} if nobody changed it since, without waiting (the
     * planner's thread goes on dispatching fetches while the manager commits): completes with
     * the new version, empty on a conflict or when the hint is gone, or fails after the store's
     * timeout.
     */
    CompletableFuture<Optional<Versioned>> replaceAsync(Versioned v, Hint next) {
        return mgmtd.putHintAsync(v.hint().id(), v.version(), encode(next))
                .orTimeout(timeout.toMillis(), TimeUnit.MILLISECONDS)
                .handle((s, e) -> {
                    if (e == null) {
                        return Optional.of(new Versioned(next, s.version()));
                    }
                    StrataException se = StrataException.wrap(e);
                    if (se.status() == Status.TXN_CONFLICT || se.status() == Status.NOT_FOUND) {
                        return Optional.empty();
                    }
                    throw se;
                });
    }

    /** {@link #list} without waiting. */
    CompletableFuture<List<Versioned>> listAsync() {
        return mgmtd.hintsAsync().orTimeout(timeout.toMillis(), TimeUnit.MILLISECONDS)
                .thenApply(all -> all.stream().map(HintStore::decode).toList());
    }

    Optional<Versioned> get(long id) {
        return Futures.join(mgmtd.hintAsync(id), timeout).map(HintStore::decode);
    }

    List<Versioned> list() {
        List<Versioned> out = new ArrayList<>();
        for (StoredHint s : Futures.join(mgmtd.hintsAsync(), timeout)) {
            out.add(decode(s));
        }
        return out;
    }

    void delete(long id) {
        try {
            Futures.join(mgmtd.deleteHintAsync(id, 0), timeout);
        } catch (StrataException e) {
            if (e.status() != Status.NOT_FOUND) {
                throw e;
            }
        }
    }

    static byte[] encode(Hint h) {
        try {
            return JSON.writeValueAsBytes(h);
        } catch (IOException e) {
            throw new StrataException(Status.INTERNAL, "cannot encode hint " + h.id() + ": " + e.getMessage(), e);
        }
    }

    static Versioned decode(StoredHint s) {
        try {
            Hint h = JSON.readValue(s.value(), Hint.class);
            return new Versioned(h.withId(s.id()), s.version());
        } catch (IOException e) {
            throw new StrataException(Status.INTERNAL, "hint " + s.id() + " in the cluster manager is not readable: " + e.getMessage(), e);
        }
    }
}
