package io.strata.client;

/**
 * One read of a batch: {@code length} bytes at {@code offset} of the file at {@code path}.
 * {@code tag} is the caller's, returned with the result (an index into its sample list).
 */
public record ReadRequest(String path, long offset, int length, long tag) {
    public ReadRequest {
        if (path == null || offset < 0 || length < 0) {
            throw new IllegalArgumentException("bad read request " + path + " @" + offset + "+" + length);
        }
    }

    public static ReadRequest of(String path, long offset, int length) {
        return new ReadRequest(path, offset, length, 0);
    }
}
