package io.strata.client;

import io.strata.core.Status;
import io.strata.core.StrataException;
import java.util.ArrayList;
import java.util.List;

/**
 * Absolute paths as the client takes them: "/" separated, empty and "." components dropped,
 * ".." applied lexically (as {@code java.nio.file.Path.normalize} does; the client never sees a
 * path through a symlink it would have to resolve first).
 */
final class PathNames {
    private PathNames() {
    }

    static List<String> components(String path) {
        if (path == null || !path.startsWith("/")) {
            throw new StrataException(Status.INVALID_ARGUMENT, "not an absolute path: \"" + path + "\"");
        }
        List<String> out = new ArrayList<>();
        for (String p : path.split("/")) {
            if (p.isEmpty() || p.equals(".")) {
                continue;
            }
            if (p.equals("..")) {
                if (!out.isEmpty()) {
                    out.remove(out.size() - 1);
                }
                continue;
            }
            out.add(p);
        }
        return out;
    }

    /** The canonical spelling: "/" or "/a/b". */
    static String normalize(String path) {
        List<String> c = components(path);
        return join(c, 0, c.size());
    }

    static String join(List<String> parts, int from, int to) {
        if (to <= from) {
            return "/";
        }
        StringBuilder sb = new StringBuilder();
        for (int i = from; i < to; i++) {
            sb.append('/').append(parts.get(i));
        }
        return sb.toString();
    }

    /** The parent directory's path ("/" for a child of the root). */
    static String parent(List<String> parts) {
        return join(parts, 0, parts.size() - 1);
    }

    static String name(List<String> parts) {
        if (parts.isEmpty()) {
            throw new StrataException(Status.INVALID_ARGUMENT, "the root has no name in a parent directory");
        }
        return parts.get(parts.size() - 1);
    }
}
