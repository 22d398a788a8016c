package io.strata.client;

/** How {@link StrataFileSystem#open} opens a file. */
public enum OpenFlag {
    READ,
    WRITE,
    /** Create the file if it does not exist (mode from the open call). */
    CREATE,
    /** With CREATE: fail with ALREADY_EXISTS if it exists. */
    EXCLUSIVE,
    /** With WRITE: drop the file's bytes as it opens (O_TRUNC). */
    TRUNCATE
}
