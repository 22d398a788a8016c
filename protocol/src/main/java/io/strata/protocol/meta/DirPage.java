package io.strata.protocol.meta;

import java.util.List;

/**
 * One page of a directory listing in name (byte) order. {@code next} is the cursor for the next
 * page (pass it as {@code after}), or null when the listing is complete.
 */
public record DirPage(List<DirEntry> entries, String next) {
    public DirPage {
        entries = List.copyOf(entries);
    }
}
