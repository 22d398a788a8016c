package io.strata.cli;

import static io.strata.cli.UserErrors.at;

import io.netty.buffer.ByteBuf;
import io.strata.client.EntryStatus;
import io.strata.client.FileStatus;
import io.strata.client.OpenFlag;
import io.strata.client.StrataFile;
import io.strata.client.StrataFileSystem;
import io.strata.core.DataSize;
import io.strata.core.Status;
import io.strata.core.StrataException;
import io.strata.core.util.Futures;
import io.strata.protocol.meta.DeviceNumber;
import io.strata.protocol.meta.DirEntry;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.PrintWriter;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Instant;
import java.util.EnumSet;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * The native client commands: the namespace and its files through the Java API, no FUSE needed.
 * Strata paths are absolute ({@code /data/x}); in {@code cp}, an argument naming a Strata file is
 * written {@code strata:/data/x} (plain paths are local files). Each finds its cluster through
 * {@link ClientSource}; every Strata call runs through {@link UserErrors#at} with the path as the
 * user wrote it, so that an error names it.
 */
final class FsCommands {
    static final String PREFIX = "strata:";
    private static final int IO = 4 << 20;

    private FsCommands() {
    }

    abstract static class Base implements Callable<Integer> {
        @Mixin
        ClientSource source;

        @CommandLine.Spec
        CommandLine.Model.CommandSpec spec;

        PrintWriter out() {
            return spec.commandLine().getOut();
        }

        @Override
        public Integer call() throws Exception {
            try (ClientSource.Session s = source.connect()) {
                return run(s.fs());
            }
        }

        abstract int run(StrataFileSystem fs) throws Exception;
    }

    /** A command applied to each of its Strata paths in turn ({@code strata:} prefixes allowed), stopping at the first error. */
    abstract static class EachPath extends Base {
        @Parameters(paramLabel = "PATH", arity = "1..*", description = "Strata paths.")
        List<String> paths;

        @Override
        int run(StrataFileSystem fs) {
            for (String p : paths) {
                apply(fs, strip(p));
            }
            return 0;
        }

        abstract void apply(StrataFileSystem fs, String path);
    }

    @Command(name = "ls", mixinStandardHelpOptions = true,
            description = {"List a Strata directory (-l: with sizes, modes and times).", "",
                    "One name a line, directories marked with a trailing /; -l adds mode, links, owner, group, size and "
                            + "modification time. On a file, prints just that file."},
            footerHeading = "%nExamples:%n",
            footer = {"  strata ls /                        the local cluster's top directory",
                    "  strata ls -l /ds                   with sizes, modes and times",
                    "  strata ls / --mgmtd mgmt1:9200     on a real cluster (or: STRATA_MGMTD)"})
    static final class Ls extends Base {
        @Option(names = "-l", description = "Long listing.")
        boolean longFormat;

        @Parameters(paramLabel = "PATH", arity = "0..1", defaultValue = "/", description = "Strata directory (default /).")
        String path;

        @Override
        int run(StrataFileSystem fs) {
            FileStatus st = at(path, () -> fs.stat(path));
            if (!st.isDirectory()) {
                print(path.substring(path.lastIndexOf('/') + 1), st);
                return 0;
            }
            List<DirEntry> entries = at(path, () -> Futures.join(fs.listAsync(path, longFormat), fs.config().metaTimeout().multipliedBy(4)));
            for (DirEntry e : entries) {
                if (longFormat) {
                    print(e.name(), FsCommandsSupport.status(fs, path, e));
                } else {
                    out().println(e.name() + (StrataFileSystem.isDirectory(e.type()) ? "/" : ""));
                }
            }
            return 0;
        }

        private void print(String name, FileStatus st) {
            if (!longFormat) {
                out().println(name);
                return;
            }
            out().printf("%s %3d %5d %5d %12d %s %s%s%n", FsCommandsSupport.modeString(st), st.nlink(), st.uid(), st.gid(), st.size(),
                    Instant.ofEpochSecond(0, st.mtimeNanos()).toString().replace('T', ' ').replaceAll("\\.\\d+Z$", "Z"), name,
                    st.isSymlink() ? " -> " + st.symlinkTarget() : st.isDirectory() ? "/" : "");
        }
    }

    @Command(name = "stat", mixinStandardHelpOptions = true,
            description = {"Show a Strata path's attributes, layout and policy.", "",
                    "Type, inode, size, links, mode, owner and times; for a file also its data version, consistency mode "
                            + "and layout (chunk size, chains, chain table, replicas), and for a file staged in L2 where its newest "
                            + "bytes are durable (l2, l3) with the drain's progress; for a directory that sets one, its own "
                            + "policy. A symlink is shown itself, not followed."},
            footerHeading = "%nExamples:%n",
            footer = {"  strata stat /ds/train.bin",
                    "  strata stat /ckpt --data /scratch/strata    a `strata up` cluster elsewhere"})
    static final class Stat extends Base {
        @Parameters(paramLabel = "PATH", description = "Strata path.")
        String path;

        @Override
        int run(StrataFileSystem fs) {
            EntryStatus entry = at(path, () -> fs.lstatEntry(path));
            FileStatus st = entry.status();
            PrintWriter o = out();
            o.println("  path: " + path);
            o.println("  type: " + FsCommandsSupport.typeName(st) + "   inode: " + Long.toUnsignedString(st.inode().value()));
            if (st.type().isDevice()) {
                o.println("  device: " + DeviceNumber.toString(entry.rdev()));
            }
            o.println("  size: " + st.size() + " (" + DataSize.human(st.size()) + ")   links: " + st.nlink());
            o.println("  mode: " + FsCommandsSupport.modeString(st) + " (" + String.format("%04o", st.mode()) + ")   uid: " + st.uid()
                    + "   gid: " + st.gid());
            o.println("  modified: " + Instant.ofEpochSecond(0, st.mtimeNanos()) + "   changed: " + Instant.ofEpochSecond(0, st.ctimeNanos()));
            if (st.isSymlink()) {
                o.println("  target: " + st.symlinkTarget());
            }
            if (st.isFile()) {
                o.println("  data version: " + st.dataVersion() + "   consistency: " + st.consistency().policyName());
                o.println("  layout: chunks of " + DataSize.ofBytes(st.layout().chunkSize()) + " over " + st.layout().stripeWidth()
                        + " chains " + st.layout().chains().stream().map(c -> String.valueOf(c.value())).toList()
                        + " (chain table " + st.layout().tableId() + " v" + st.layout().tableVersion() + ", " + st.layout().replicas()
                        + " replicas)");
            }
            if (st.isFile()) {
                StagingView.describe(fs, st).ifPresent(o::println);
            }
            if (!st.policy().isEmpty()) {
                o.println("  policy" + (st.isDirectory() ? " (set here)" : "") + ": " + st.policy());
            }
            return 0;
        }
    }

    @Command(name = "cat", mixinStandardHelpOptions = true,
            description = {"Write Strata files to standard output.", "",
                    "The files one after the other, byte for byte, as `cat` does with local files."},
            footerHeading = "%nExamples:%n",
            footer = {"  strata cat /ds/labels.csv | head",
                    "  strata cat /ds/part-0 /ds/part-1 > whole.bin"})
    static final class Cat extends Base {
        @Parameters(paramLabel = "PATH", arity = "1..*", description = "Strata files.")
        List<String> paths;

        @Override
        int run(StrataFileSystem fs) throws IOException {
            out().flush();
            OutputStream o = FsCommandsSupport.stdout();
            for (String p : paths) {
                at(p, () -> {
                    try (StrataFile f = fs.openRead(p)) {
                        FsCommandsSupport.copy(f, o);
                    }
                    return null;
                });
            }
            o.flush();
            return 0;
        }
    }

    @Command(name = "put", mixinStandardHelpOptions = true,
            description = {"Copy local files into Strata (into DEST when it is a directory).", "",
                    "When DEST is an existing Strata directory, each file goes into it under its own name; else DEST is "
                            + "the new file's path (an existing file is replaced). Several files need a directory."},
            footerHeading = "%nExamples:%n",
            footer = {"  strata put model.bin /ckpt/            into the directory /ckpt",
                    "  strata put a.bin b.bin /ds              several files into /ds",
                    "  strata put notes.txt /ds/readme.txt     under another name"})
    static final class Put extends Base {
        @Parameters(paramLabel = "LOCAL... DEST", arity = "2..*", hideParamSyntax = true, description = "Local files, then a Strata path.")
        List<String> args;

        @Override
        int run(StrataFileSystem fs) throws IOException {
            String dest = strip(args.get(args.size() - 1));
            List<String> srcs = args.subList(0, args.size() - 1);
            boolean intoDir = isDir(fs, dest);
            if (srcs.size() > 1 && !intoDir) {
                throw new IllegalArgumentException("copying several files needs an existing Strata directory, not " + dest);
            }
            for (String s : srcs) {
                Path local = Path.of(s);
                String target = intoDir ? join(dest, local.getFileName().toString()) : dest;
                long n = at(target, () -> FsCommandsSupport.upload(fs, local, target));
                out().println(local + " -> " + PREFIX + target + " (" + DataSize.human(n) + ")");
            }
            return 0;
        }
    }

    @Command(name = "cp", mixinStandardHelpOptions = true,
            description = {"Copy files between the local disk and Strata, or within Strata.", "",
                    "A Strata path is written with the prefix strata: (strata:/ds/a), any other path is a local file; "
                            + "both sides may be in Strata. When DEST is an existing directory, each file goes into it under "
                            + "its own name; several sources need a directory."},
            footerHeading = "%nExamples:%n",
            footer = {"  strata cp strata:/ckpt/model.bin .    from Strata to the current directory",
                    "  strata cp model.bin strata:/ckpt/     from the local disk into /ckpt",
                    "  strata cp strata:/ds/a strata:/ds/b   within Strata"})
    static final class Cp extends Base {
        @Parameters(paramLabel = "SRC... DEST", arity = "2..*", hideParamSyntax = true, description = "Sources, then the destination (a directory for several).")
        List<String> args;

        @Override
        int run(StrataFileSystem fs) throws IOException {
            String dest = args.get(args.size() - 1);
            List<String> srcs = args.subList(0, args.size() - 1);
            boolean destStrata = dest.startsWith(PREFIX);
            boolean intoDir = destStrata ? isDir(fs, strip(dest)) : Files.isDirectory(Path.of(dest));
            if (srcs.size() > 1 && !intoDir) {
                throw new IllegalArgumentException("copying several files needs an existing directory as destination, not " + dest);
            }
            for (String src : srcs) {
                boolean srcStrata = src.startsWith(PREFIX);
                String name = src.substring(src.lastIndexOf('/') + 1);
                String target = intoDir ? (destStrata ? join(strip(dest), name) : Path.of(dest).resolve(name).toString())
                        : (destStrata ? strip(dest) : dest);
                long n;
                if (srcStrata && destStrata) {
                    n = FsCommandsSupport.copyWithin(fs, strip(src), target);
                } else if (srcStrata) {
                    n = at(src, () -> FsCommandsSupport.download(fs, strip(src), Path.of(target)));
                } else if (destStrata) {
                    n = at(PREFIX + target, () -> FsCommandsSupport.upload(fs, Path.of(src), target));
                } else {
                    throw new IllegalArgumentException("neither " + src + " nor " + dest + " is a Strata path (write strata:/PATH)");
                }
                out().println(src + " -> " + (destStrata ? PREFIX : "") + target + " (" + DataSize.human(n) + ")");
            }
            return 0;
        }
    }

    @Command(name = "rm", mixinStandardHelpOptions = true,
            description = {"Remove Strata files, symlinks and (with -r) directories.", "",
                    "With -r a directory goes with everything under it. A removed file that is still open elsewhere stays "
                            + "readable there until it is closed."},
            footerHeading = "%nExamples:%n",
            footer = {"  strata rm /ds/old.bin",
                    "  strata rm -r /ckpt/run1            a directory and all it holds"})
    static final class Rm extends EachPath {
        @Option(names = {"-r", "--recursive"}, description = "Remove directories and what they contain.")
        boolean recursive;

        @Override
        void apply(StrataFileSystem fs, String path) {
            FsCommandsSupport.remove(fs, path, recursive);
        }
    }

    @Command(name = "mkdir", mixinStandardHelpOptions = true,
            description = {"Create Strata directories (-p: with parents, no error if they exist).", "",
                    "New directories get mode 0755 and your uid and gid, and inherit their parent's policy (see `strata "
                            + "policy`)."},
            footerHeading = "%nExamples:%n",
            footer = {"  strata mkdir /ckpt",
                    "  strata mkdir -p /ds/train/shards"})
    static final class Mkdir extends EachPath {
        @Option(names = {"-p", "--parents"}, description = "Create missing parents; existing directories are fine.")
        boolean parents;

        @Override
        void apply(StrataFileSystem fs, String path) {
            at(path, () -> {
                if (parents) {
                    fs.mkdirs(path);
                } else {
                    fs.mkdir(path, 0755);
                }
                return null;
            });
        }
    }

    static String strip(String p) {
        return p.startsWith(PREFIX) ? p.substring(PREFIX.length()) : p;
    }

    static String join(String dir, String name) {
        return dir.endsWith("/") ? dir + name : dir + "/" + name;
    }

    static boolean isDir(StrataFileSystem fs, String path) {
        return at(path, () -> {
            try {
                return fs.stat(path).isDirectory();
            } catch (StrataException e) {
                if (e.status() == Status.NOT_FOUND) {
                    return false;
                }
                throw e;
            }
        });
    }

    /** Helpers kept apart from the picocli classes. */
    static final class FsCommandsSupport {
        private FsCommandsSupport() {
        }

        static OutputStream stdout() {
            return new java.io.FileOutputStream(java.io.FileDescriptor.out) {
                @Override
                public void close() {
                    // never close the process's standard output
                }
            };
        }

        /** The type in stat(1)'s words. */
        static String typeName(FileStatus st) {
            return switch (st.type()) {
                case FILE -> "file";
                case DIRECTORY -> "directory";
                case SYMLINK -> "symlink";
                case FIFO -> "fifo";
                case SOCKET -> "socket";
                case CHAR_DEVICE -> "character device";
                case BLOCK_DEVICE -> "block device";
            };
        }

        static FileStatus status(StrataFileSystem fs, String dir, DirEntry e) {
            String path = join(dir, e.name());
            return at(path, () -> fs.lstat(path));
        }

        static String modeString(FileStatus st) {
            StringBuilder sb = new StringBuilder(switch (st.type()) {
                case DIRECTORY -> "d";
                case SYMLINK -> "l";
                case FIFO -> "p";
                case SOCKET -> "s";
                case CHAR_DEVICE -> "c";
                case BLOCK_DEVICE -> "b";
                case FILE -> "-";
            });
            String rwx = "rwxrwxrwx";
            for (int i = 0; i < 9; i++) {
                sb.append((st.mode() & (1 << (8 - i))) != 0 ? rwx.charAt(i) : '-');
            }
            return sb.toString();
        }

        static void copy(StrataFile f, OutputStream o) throws IOException {
            byte[] b = new byte[IO];
            for (long off = 0; ; ) {
                ByteBuf buf = Futures.join(f.readAsync(off, IO), java.time.Duration.ofMinutes(2));
                try {
                    int n = buf.readableBytes();
                    if (n == 0) {
                        return;
                    }
                    buf.getBytes(buf.readerIndex(), b, 0, n);
                    o.write(b, 0, n);
                    off += n;
                } finally {
                    buf.release();
                }
            }
        }

        static long upload(StrataFileSystem fs, Path local, String target) throws IOException {
            if (Files.isDirectory(local)) {
                throw new IllegalArgumentException(local + " is a directory (copy its files one by one)");
            }
            long n = 0;
            try (InputStream in = Files.newInputStream(local); StrataFile f = fs.create(target)) {
                byte[] b = new byte[IO];
                for (int k; (k = in.readNBytes(b, 0, b.length)) > 0; n += k) {
                    f.write(n, b, 0, k);
                }
            }
            return n;
        }

        static long download(StrataFileSystem fs, String src, Path local) throws IOException {
            try (StrataFile f = fs.openRead(src);
                 FileChannel out = FileChannel.open(local, StandardOpenOption.CREATE, StandardOpenOption.WRITE,
                         StandardOpenOption.TRUNCATE_EXISTING)) {
                long n = 0;
                ByteBuffer b = ByteBuffer.allocateDirect(IO);
                while (true) {
                    b.clear();
                    int k = f.read(n, b);
                    if (k <= 0) {
                        break;
                    }
                    b.flip();
                    while (b.hasRemaining()) {
                        out.write(b);
                    }
                    n += k;
                }
                return n;
            }
        }

        /** Copies Strata file {@code src} to {@code dst}; an error names the side it is about. */
        static long copyWithin(StrataFileSystem fs, String src, String dst) {
            String shownSrc = PREFIX + src;
            String shownDst = PREFIX + dst;
            FileStatus source = at(shownSrc, () -> fs.stat(src));
            if (at(shownDst, () -> fs.exists(dst) && fs.stat(dst).inode().equals(source.inode()))) {
                // opening the destination truncates it: that would empty the source
                throw new IllegalArgumentException(shownSrc + " and " + shownDst + " are the same file");
            }
            try (StrataFile in = at(shownSrc, () -> fs.openRead(src));
                 StrataFile out = at(shownDst, () -> fs.open(dst, EnumSet.of(OpenFlag.WRITE, OpenFlag.CREATE, OpenFlag.TRUNCATE), 0644))) {
                long n = 0;
                while (true) {
                    long off = n;
                    ByteBuf b = at(shownSrc, () -> Futures.join(in.readAsync(off, IO), java.time.Duration.ofMinutes(2)));
                    try {
                        int k = b.readableBytes();
                        if (k == 0) {
                            return n;
                        }
                        at(shownDst, () -> Futures.join(out.writeAsync(off, b), java.time.Duration.ofMinutes(2)));
                        n += k;
                    } finally {
                        b.release();
                    }
                }
            }
        }

        static void remove(StrataFileSystem fs, String path, boolean recursive) {
            FileStatus st = at(path, () -> fs.lstat(path));
            if (st.isDirectory()) {
                if (!recursive) {
                    throw new IllegalArgumentException(path + ": is a directory (use rm -r)");
                }
                for (DirEntry e : at(path, () -> fs.list(path))) {
                    remove(fs, join(path, e.name()), true);
                }
            }
            at(path, () -> {
                fs.delete(path);
                return null;
            });
        }
    }
}
