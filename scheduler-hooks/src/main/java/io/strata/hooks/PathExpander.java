package io.strata.hooks;

import io.strata.client.FileStatus;
import io.strata.client.StrataFileSystem;
import io.strata.core.Status;
import io.strata.core.StrataException;
import io.strata.core.util.Futures;
import io.strata.protocol.meta.Caller;
import io.strata.protocol.meta.DirEntry;
import io.strata.protocol.meta.InodeAttrs;
import java.nio.file.FileSystems;
import java.nio.file.Path;
import java.nio.file.PathMatcher;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Turns a hint's paths into the regular files they name, through the meta service: a file is
 * itself, a directory is every file under it, a glob ({@code * ? [..] {a,b}}, {@code **} across
 * directories) is every file (or everything under a directory) whose path it matches. Symlinks
 * are not followed. A path that names nothing is an error naming it, so a scheduler learns of a
 * typo at submission, not when the job starts.
 */
final class PathExpander {
    /** Most files one hint may name. */
    static final int MAX_FILES = 2_000_000;

    /** A regular file and its path. */
    record FileRef(String path, InodeAttrs attrs) {
    }

    private final StrataFileSystem fs;
    private final Duration timeout;

    PathExpander(StrataFileSystem fs, Duration timeout) {
        this.fs = fs;
        this.timeout = timeout;
    }

    /** The files {@code paths} name, each once, in the order found; {@code field} names the input in errors ("paths"). */
    List<FileRef> expand(List<String> paths, String field) {
        Map<Long, FileRef> out = new LinkedHashMap<>();
        for (int i = 0; i < paths.size(); i++) {
            String p = paths.get(i);
            String what = field + "[" + i + "]";
            int before = out.size();
            if (isGlob(p)) {
                glob(p, what, out);
            } else {
                FileStatus st = stat(p, what);
                InodeAttrs a = attrs(st);
                if (a.isFile()) {
                    add(out, new FileRef(p, a));
                } else if (a.isDirectory()) {
                    walk(p, out, null);
                }
            }
            if (out.size() == before && !covered(p, out)) {
                throw new StrataException(Status.NOT_FOUND, what + ": \"" + p + "\" names no regular file");
            }
        }
        return new ArrayList<>(out.values());
    }

    private static boolean covered(String p, Map<Long, FileRef> out) {
        return out.values().stream().anyMatch(f -> f.path().equals(p) || f.path().startsWith(p.endsWith("/") ? p : p + "/"));
    }

    static boolean isGlob(String p) {
        return p.indexOf('*') >= 0 || p.indexOf('?') >= 0 || p.indexOf('[') >= 0 || p.indexOf('{') >= 0;
    }

    private void glob(String pattern, String what, Map<Long, FileRef> out) {
        String[] parts = pattern.split("/");
        StringBuilder base = new StringBuilder();
        for (String part : parts) {
            if (part.isEmpty()) {
                continue;
            }
            if (isGlob(part)) {
                break;
            }
            base.append('/').append(part);
        }
        String dir = base.isEmpty() ? "/" : base.toString();
        FileStatus st = stat(dir, what);
        if (!st.isDirectory()) {
            throw new StrataException(Status.NOT_A_DIRECTORY, what + ": \"" + dir + "\" (before the pattern) is not a directory");
        }
        PathMatcher m = FileSystems.getDefault().getPathMatcher("glob:" + pattern);
        walk(dir, out, m);
    }

    /** Adds the files under {@code dir}: all of them, or those {@code m} matches (a matched directory brings everything under it). */
    private void walk(String dir, Map<Long, FileRef> out, PathMatcher m) {
        Deque<String> todo = new ArrayDeque<>();
        todo.add(dir);
        while (!todo.isEmpty()) {
            String d = todo.poll();
            List<DirEntry> entries = Futures.join(fs.listAsync(d, true), timeout);
            for (DirEntry e : entries) {
                String path = (d.equals("/") ? "" : d) + "/" + e.name();
                InodeAttrs a = e.attrs() != null ? e.attrs() : Futures.join(fs.meta().getattrAsync(Caller.ROOT, e.inode()), timeout);
                boolean match = m == null || m.matches(Path.of(path));
                if (a.isDirectory()) {
                    if (match && m != null) {
                        walk(path, out, null);
                    } else {
                        todo.add(path);
                    }
                } else if (a.isFile() && match) {
                    add(out, new FileRef(path, a));
                }
            }
        }
    }

    private static void add(Map<Long, FileRef> out, FileRef f) {
        out.putIfAbsent(f.attrs().id().value(), f);
        if (out.size() > MAX_FILES) {
            throw new StrataException(Status.INVALID_ARGUMENT, "paths: more than " + MAX_FILES + " files; split the hint");
        }
    }

    private FileStatus stat(String p, String what) {
        if (!p.startsWith("/")) {
            throw new StrataException(Status.INVALID_ARGUMENT, what + ": \"" + p + "\" is not an absolute path");
        }
        try {
            return Futures.join(fs.lstatAsync(p), timeout);
        } catch (StrataException e) {
            throw new StrataException(e.status(), what + ": \"" + p + "\": " + e.getMessage(), e);
        }
    }

    private InodeAttrs attrs(FileStatus st) {
        return Futures.join(fs.meta().getattrAsync(Caller.ROOT, st.inode()), timeout);
    }
}
