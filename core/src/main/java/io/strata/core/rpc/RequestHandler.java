package io.strata.core.rpc;

import java.util.concurrent.CompletableFuture;

/**
 * Serves one message type. Runs on the executor it was registered with (the connection's event
 * loop by default, so it must not block there). Throwing or failing the future sends an error
 * response; a {@link io.strata.core.StrataException} keeps its status.
 */
@FunctionalInterface
public interface RequestHandler<M extends Message> {
    CompletableFuture<Reply> handle(Request<M> request) throws Exception;
}
