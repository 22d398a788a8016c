package io.strata.protocol.mgmtd;

import io.strata.core.TargetId;
import io.strata.protocol.routing.LocalState;

/**
 * One target's local state as its node reports it. {@code chainVersion} names the chain
 * version an up-to-date report is about (the version the resync ran under); 0 otherwise.
 */
public record TargetReport(TargetId target, LocalState local, long chainVersion) {
}
