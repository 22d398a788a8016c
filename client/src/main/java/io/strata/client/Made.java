package io.strata.client;

/**
 * What a mkdir or symlink made, and the directory it was made in as the namespace answered right
 * after the change (new times; one link more for a mkdir), so that a caller keeping directory
 * attributes need not ask again.
 */
public record Made(FileStatus entry, FileStatus dir) {
}
