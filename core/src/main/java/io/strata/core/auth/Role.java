package io.strata.core.auth;

import java.util.Arrays;
import java.util.Locale;
import java.util.stream.Collectors;

/**
 * What a token's holder is to the cluster. A server admits some roles on its port and may allow
 * a message only from some of them (see docs/security.md for who may do what). The code is part
 * of a token's signed claims: never reuse or renumber one, only add.
 */
public enum Role {
    /** A storage node: forwards updates and resyncs chunks to its chain peers, registers with the manager. */
    STORAGE(1),
    /** An L2 pool agent: registers with the manager, reads and writes chunks below it. */
    L2(2),
    /** A meta service: registers with the manager, frees deleted files' chunks on the storage nodes. */
    META(3),
    /** A cluster manager peer. */
    MGMTD(4),
    /** A client or mount: reads and writes files. */
    CLIENT(5),
    /** The scheduler hooks: posts prefetch hints. */
    SCHEDULER(6),
    /** An operator: everything, including chain tables and policies. */
    ADMIN(7);

    private final int code;

    Role(int code) {
        this.code = code;
    }

    int code() {
        return code;
    }

    static Role fromCode(int code) {
        for (Role r : values()) {
            if (r.code == code) {
                return r;
            }
        }
        throw new IllegalArgumentException("unknown role code " + code);
    }

    /** The name used in config, on the command line and in messages ({@code storage}, {@code admin}...). */
    public String id() {
        return name().toLowerCase(Locale.ROOT);
    }

    /** The role named {@code id}; the error lists the valid names. */
    public static Role parse(String id) {
        for (Role r : values()) {
            if (r.id().equals(id)) {
                return r;
            }
        }
        throw new IllegalArgumentException("unknown role '" + id + "' (one of "
                + Arrays.stream(values()).map(Role::id).collect(Collectors.joining(", ")) + ")");
    }

    @Override
    public String toString() {
        return id();
    }
}
