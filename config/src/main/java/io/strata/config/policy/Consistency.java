package io.strata.config.policy;

/** How clients and the kernel may cache a directory's files (policy field {@code consistency}). */
public enum Consistency {
    /** No client data cache: every read reaches the tier that holds the newest bytes. */
    STRICT,
    /** An open revalidates the file's data version; a close or fsync publishes writes (default). */
    CLOSE_TO_OPEN,
    /** Files are read-only once closed: cached without revalidation, kernel page cache kept. */
    IMMUTABLE;

    public String policyName() {
        return name().toLowerCase(java.util.Locale.ROOT).replace('_', '-');
    }
}
