package io.strata.storage;

import io.strata.core.ChainId;
import io.strata.core.TargetId;

/**
 * Where one resync stands, as its predecessor runs it: the chain and the chain version it runs
 * under, the target being synced, the chunks compared so far, copied (whole), removed on the
 * target and left as they were, the bytes copied, and its state.
 */
public record ResyncProgress(ChainId chain, long chainVersion, TargetId target, long compared, long copied, long removed,
                             long same, long bytes, State state) {
    /** A resync runs, finished (sync-done acknowledged), failed (retried later) or was cancelled by a routing change. */
    public enum State { RUNNING, DONE, FAILED, CANCELLED }
}
