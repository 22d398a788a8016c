package io.strata.store;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;
import java.util.function.Predicate;

/**
 * Finds the files of a store directory that its index does not account for: files whose name
 * is one of the store's (parsed into a key) but that the index does not name (an interrupted
 * write or delete: <em>orphans</em>), temporary files of crash-safe writes that never completed
 * ({@link AtomicFiles#isTemporary}), and files whose name is not the store's at all. What to do
 * with each kind is the store's decision: a cache deletes them all ({@link #sweep}), a store
 * with pooled files may recycle orphans and leave foreign files alone ({@link #scan}).
 *
 * <p>{@code indexed} is asked once per file while the directory is read; the store must not
 * write new files into the directory during a sweep (L1 sweeps on the thread that writes its
 * files). Index entries removed meanwhile are harmless: their files are being deleted anyway.
 */
public final class OrphanSweep {
    private OrphanSweep() {
    }

    /** A file and the key its name stands for. */
    public record Named<K>(Path path, K key) {
    }

    /** What a directory holds, by kind. */
    public record Scan<K>(List<Named<K>> indexed, List<Named<K>> orphans, List<Path> temporary, List<Path> foreign) {
        /** Number of files the index does not account for. */
        public int unaccounted() {
            return orphans.size() + temporary.size() + foreign.size();
        }
    }

    /**
     * Sorts the files directly in {@code dir} (subdirectories are left alone; nothing when
     * {@code dir} does not exist): {@code parse} gives the key a name stands for (null: not a
     * name of the store's).
     */
    public static <K> Scan<K> scan(Path dir, Function<String, K> parse, Predicate<K> indexed) throws IOException {
        Scan<K> out = new Scan<>(new ArrayList<>(), new ArrayList<>(), new ArrayList<>(), new ArrayList<>());
        if (!Files.isDirectory(dir)) {
            return out;
        }
        try (DirectoryStream<Path> ds = Files.newDirectoryStream(dir)) {
            for (Path p : ds) {
                if (Files.isDirectory(p, LinkOption.NOFOLLOW_LINKS)) {
                    continue;
                }
                String name = p.getFileName().toString();
                K k = parse.apply(name);
                if (k != null) {
                    (indexed.test(k) ? out.indexed() : out.orphans()).add(new Named<>(p, k));
                } else if (AtomicFiles.isTemporary(name)) {
                    out.temporary().add(p);
                } else {
                    out.foreign().add(p);
                }
            }
        }
        return out;
    }

    /** Deletes every file of {@code dir} the index does not account for (orphans, temporary and foreign files); returns how many. */
    public static <K> int sweep(Path dir, Function<String, K> parse, Predicate<K> indexed) throws IOException {
        Scan<K> s = scan(dir, parse, indexed);
        for (Named<K> o : s.orphans()) {
            Files.deleteIfExists(o.path());
        }
        for (Path p : s.temporary()) {
            Files.deleteIfExists(p);
        }
        for (Path p : s.foreign()) {
            Files.deleteIfExists(p);
        }
        return s.unaccounted();
    }
}
