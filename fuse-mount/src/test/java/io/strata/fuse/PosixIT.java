package io.strata.fuse;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assumptions.assumeThat;

import io.strata.client.EntryStatus;
import io.strata.client.OpenFlag;
import io.strata.client.StrataFile;
import io.strata.client.StrataFileSystem;
import io.strata.core.Status;
import io.strata.core.StrataException;
import io.strata.protocol.meta.Caller;
import io.strata.protocol.meta.DeviceNumber;
import io.strata.protocol.meta.InodeType;
import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.EnumSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * POSIX behaviour of a real FUSE mount, as the system's own tools and calls see it: FIFOs,
 * devices and UNIX sockets as namespace objects whose I/O the kernel serves (a device's only
 * where the mount allows devices, which it does not: it is nodev), the set-ID bits a write by
 * another user clears, ftruncate(2) through a descriptor opened with mode 0, and directory link
 * counts. Steps as another user run under {@code setpriv} as nobody (65534).
 */
@RequiresFuse
class PosixIT {
    static final String NOBODY = "setpriv --reuid=65534 --regid=65534 --clear-groups ";

    @TempDir
    static Path dir;
    static MountedCluster c;
    static Path mnt;

    @BeforeAll
    static void start() throws IOException {
        c = MountedCluster.start(dir.resolve("cluster"), 82);
        mnt = c.mnt;
        // nobody must reach the mount point: the temporary directories above it are 0700
        for (Path p = mnt.getParent(); p.startsWith(dir); p = p.getParent()) {
            Files.setPosixFilePermissions(p, PosixFilePermissions.fromString("rwx--x--x"));
        }
    }

    @AfterAll
    static void stop() {
        if (c != null) {
            c.close();
        }
    }

    /** A fresh directory on the mount that anyone may write in. */
    static Path scratch(String name) throws IOException {
        Path d = Files.createDirectory(mnt.resolve(name));
        Sh.run(mnt, "chmod", "0777", d.toString()).ok();
        return d;
    }

    static String sh(Path cwd, String script) {
        return Sh.sh(cwd, script).ok().out().strip();
    }

    static void assumeRootWithSetpriv() {
        assumeThat(uid()).as("runs as root (nobody's steps need setpriv from root)").isZero();
        assumeThat(Sh.sh(mnt, "command -v setpriv").code()).as("setpriv (util-linux) is installed").isZero();
    }

    @Test
    void aFifoCarriesBytesFromAWriterToAReader() throws Exception {
        Path d = scratch("fifo");
        sh(d, "mkfifo -m 0640 p");
        assertThat(sh(d, "stat -c '%F %a %h %s' p")).isEqualTo("fifo 640 1 0");
        assertThat(sh(d, "ls -l p")).startsWith("prw-r-----");
        EntryStatus st = c.fs.lstatEntry("/fifo/p");
        assertThat(st.status().type()).isEqualTo(InodeType.FIFO);
        // a writer and a reader, two processes meeting in the FIFO: the kernel moves the bytes
        CompletableFuture<Sh.Result> writer = CompletableFuture.supplyAsync(
                () -> Sh.sh(d, "seq 1 20000 > p"));
        String read = sh(d, "md5sum < p");
        assertThat(writer.get(60, TimeUnit.SECONDS).code()).isZero();
        assertThat(read).isEqualTo(sh(d, "seq 1 20000 | md5sum"));
        // and it is a name like any other: chmod, chown, rename, hard link, unlink
        sh(d, "chmod 0600 p && chown 65534:65534 p && mv p q && ln q q2");
        assertThat(sh(d, "stat -c '%F %a %u:%g %h' q")).isEqualTo("fifo 600 65534:65534 2");
        assertThat(sh(d, "ls")).isEqualTo("q\nq2");
        sh(d, "rm q q2");
        assertThat(sh(d, "ls")).isEmpty();
        // anyone may make a FIFO where they may write
        if (Sh.sh(mnt, "command -v setpriv").code() == 0 && uid() == 0) {
            sh(d, NOBODY + "mkfifo mine");
            assertThat(sh(d, "stat -c '%F %u' mine")).isEqualTo("fifo 65534");
        }
    }

    @Test
    void aDeviceMadeByRootKeepsItsTypeAndNumber() throws Exception {
        assumeRootWithSetpriv();
        Path d = scratch("dev");
        sh(d, "mknod -m 0666 zero c 1 5 && mknod -m 0640 loop b 7 200");
        // stat prints major and minor in hex
        assertThat(sh(d, "stat -c '%F %t %T %a' zero")).isEqualTo("character special file 1 5 666");
        assertThat(sh(d, "stat -c '%F %t %T %a' loop")).isEqualTo("block special file 7 c8 640");
        assertThat(sh(d, "ls -l zero")).startsWith("crw-rw-rw-");
        assertThat(c.fs.lstatEntry("/dev/zero").rdev()).isEqualTo(DeviceNumber.of(1, 5));
        assertThat(c.fs.lstatEntry("/dev/loop").status().type()).isEqualTo(InodeType.BLOCK_DEVICE);
        // the mount is nodev, as libfuse mounts by default: the node is there, its device is not reachable through it
        assertThat(sh(mnt, "findmnt -no OPTIONS " + mnt).split(",")).contains("nodev", "nosuid");
        Sh.Result open = Sh.sh(d, "head -c 16 zero");
        assertThat(open.code()).isNotZero();
        assertThat(open.out()).contains("Permission denied");
        sh(d, "mv zero zero2 && chmod 0600 zero2");
        assertThat(sh(d, "stat -c '%t %T %a' zero2")).isEqualTo("1 5 600");
        // only root makes devices
        Sh.Result refused = Sh.sh(d, NOBODY + "mknod mine c 1 3");
        assertThat(refused.code()).isNotZero();
        assertThat(refused.out()).contains("Operation not permitted");
        sh(d, "rm zero2 loop");
        assertThat(sh(d, "ls")).isEmpty();
    }

    @Test
    void aUnixSocketBindsOnTheMountAndCarriesAConversation() throws Exception {
        Path d = scratch("sock");
        Path path = d.resolve("s.sock");
        UnixDomainSocketAddress addr = UnixDomainSocketAddress.of(path);
        try (ServerSocketChannel server = ServerSocketChannel.open(StandardProtocolFamily.UNIX)) {
            server.bind(addr);
            assertThat(sh(d, "stat -c '%F' s.sock")).isEqualTo("socket");
            assertThat(c.fs.lstatEntry("/sock/s.sock").status().type()).isEqualTo(InodeType.SOCKET);
            CompletableFuture<String> answered = CompletableFuture.supplyAsync(() -> {
                try (SocketChannel peer = server.accept()) {
                    ByteBuffer b = ByteBuffer.allocate(64);
                    peer.read(b);
                    b.flip();
                    String got = StandardCharsets.UTF_8.decode(b).toString();
                    peer.write(StandardCharsets.UTF_8.encode("re: " + got));
                    return got;
                } catch (IOException e) {
                    throw new RuntimeException(e);
                }
            });
            try (SocketChannel client = SocketChannel.open(addr)) {
                client.write(StandardCharsets.UTF_8.encode("ping"));
                ByteBuffer b = ByteBuffer.allocate(64);
                client.read(b);
                b.flip();
                assertThat(StandardCharsets.UTF_8.decode(b).toString()).isEqualTo("re: ping");
            }
            assertThat(answered.get(30, TimeUnit.SECONDS)).isEqualTo("ping");
        }
        Files.delete(path);
        assertThat(sh(d, "ls")).isEmpty();
    }

    @Test
    void aWriteByAnotherUserClearsTheSetIdBits() throws Exception {
        assumeRootWithSetpriv();
        Path d = scratch("suid");
        for (String mode : new String[] {"4777", "2777", "6777"}) {
            sh(d, "rm -f f && touch f && chmod " + mode + " f");
            assertThat(sh(d, "stat -c %a f")).isEqualTo(mode);
            // write through a descriptor and stat that descriptor, as the writer sees it
            String seen = sh(d, NOBODY + "sh -c 'exec 3>>f; printf x >&3; stat -L -c %a /dev/fd/3'");
            assertThat(seen).as("mode %s after nobody's write, seen by nobody", mode).isEqualTo("777");
            assertThat(sh(d, "stat -c '%a %s' f")).isEqualTo("777 1");
        }
        // the owner's write keeps nothing either (the kernel clears the bits for anyone but root) ...
        sh(d, "chown 65534 f && chmod 4755 f");
        sh(d, NOBODY + "sh -c 'printf y >> f'");
        assertThat(sh(d, "stat -c %a f")).isEqualTo("755");
        // ... and root's write keeps them
        sh(d, "chmod 4755 f && printf z >> f");
        assertThat(sh(d, "stat -c '%a %s' f")).isEqualTo("4755 3");
        // no one but the owner changes the mode otherwise
        Sh.Result chmod = Sh.sh(d, "chown 0 f && chmod 4777 f && " + NOBODY + "chmod 0777 f");
        assertThat(chmod.code()).isNotZero();
        assertThat(chmod.out()).contains("Operation not permitted");
    }

    @Test
    void anotherUsersPrivateFilesAreNeitherReadNorChangedEvenWhenCached() throws Exception {
        assumeRootWithSetpriv();
        Path d = scratch("private");
        sh(d, "printf secret > f && chmod 600 f && mkdir -m 700 box && printf inner > box/g && chmod 755 .");
        assertThat(sh(d, "cat f box/g")).as("root reads them first: the mount's and the kernel's caches hold them").isEqualTo("secretinner");
        for (String step : new String[] {"cat f", "printf x >> f", "ls box", "cat box/g", "rm f", "chmod 644 f", "mv f f2", "truncate -s 0 f"}) {
            Sh.Result r = Sh.sh(d, NOBODY + "sh -c '" + step + "'");
            assertThat(r.code()).as("nobody: %s -> %s", step, r.out()).isNotZero();
            assertThat(r.out()).as("nobody: %s", step).containsAnyOf("Permission denied", "Operation not permitted");
        }
        assertThat(sh(d, "stat -c '%a %s %U' f")).isEqualTo("600 6 root");
        assertThat(sh(d, "cat f box/g; echo; ls")).isEqualTo("secretinner\nbox\nf");
        // the namespace refuses the same through the Java API, where no kernel checks first
        StrataFileSystem nobody = c.fs.as(Caller.of(65534, 65534));
        StrataException read = org.junit.jupiter.api.Assertions.assertThrows(StrataException.class,
                () -> nobody.open("/private/f", EnumSet.of(OpenFlag.READ), 0).close());
        assertThat(read.status()).isEqualTo(Status.PERMISSION_DENIED);
        StrataException list = org.junit.jupiter.api.Assertions.assertThrows(StrataException.class, () -> nobody.list("/private/box"));
        assertThat(list.status()).isEqualTo(Status.PERMISSION_DENIED);
    }

    @Test
    void ftruncateWorksThroughADescriptorOpenedWithModeZero() throws Exception {
        assumeRootWithSetpriv();
        Path d = scratch("ftrunc");
        // open(O_CREAT|O_RDWR, 0) then ftruncate(2) and write(2) on that descriptor, as nobody
        String perl = "use Fcntl; sysopen(my $f, q{z}, O_CREAT|O_RDWR, 0) or die qq{open: $!\\n}; "
                + "truncate($f, 1234) or die qq{ftruncate: $!\\n}; syswrite($f, q{abc}) == 3 or die qq{write: $!\\n}; "
                + "truncate($f, 2) or die qq{ftruncate: $!\\n}; close($f) or die qq{close: $!\\n}; print qq{ok}";
        assertThat(sh(d, NOBODY + "perl -e '" + perl + "'")).isEqualTo("ok");
        assertThat(sh(d, "stat -c '%a %s %u' z")).isEqualTo("0 2 65534");
        assertThat(sh(d, "head -c 2 z")).isEqualTo("ab");
        // the mode applies to every later open and to truncate(2) by path
        Sh.Result byPath = Sh.sh(d, NOBODY + "perl -e 'truncate(q{z}, 0) or die qq{truncate: $!\\n}'");
        assertThat(byPath.code()).isNotZero();
        assertThat(byPath.out()).contains("Permission denied");
        Sh.Result reopen = Sh.sh(d, NOBODY + "sh -c 'printf q >> z'");
        assertThat(reopen.code()).isNotZero();
        assertThat(reopen.out()).contains("Permission denied");
        // the same through the Java API: a handle created with mode 0 truncates; a path does not
        StrataFileSystem nobody = c.fs.as(Caller.of(65534, 65534));
        try (StrataFile h = nobody.open("/ftrunc/api", EnumSet.of(OpenFlag.CREATE, OpenFlag.READ, OpenFlag.WRITE), 0)) {
            h.truncate(77);
            assertThat(h.size()).isEqualTo(77);
        }
        assertThat(c.fs.lstat("/ftrunc/api").size()).isEqualTo(77);
        StrataException e = org.junit.jupiter.api.Assertions.assertThrows(StrataException.class, () -> nobody.truncate("/ftrunc/api", 0));
        assertThat(e.status()).isEqualTo(Status.PERMISSION_DENIED);
    }

    @Test
    void aDirectorysLinkCountIsTwoPlusItsSubdirectories() throws Exception {
        Path d = scratch("links");
        sh(d, "mkdir -p src/child src/other dst && touch src/file && ln -s child src/link && mkfifo src/p");
        assertThat(sh(d, "stat -c %h src dst src/child")).isEqualTo("4\n2\n2");
        sh(d, "rmdir src/other");
        assertThat(sh(d, "stat -c %h src")).isEqualTo("3");
        String before = sh(d, "stat -c %i src");
        assertThat(sh(d, "stat -c %i src/child/..")).isEqualTo(before);
        sh(d, "mv src/child dst/moved");
        assertThat(sh(d, "stat -c %h src dst")).isEqualTo("2\n3");
        assertThat(sh(d, "stat -c %i dst/moved/..")).isEqualTo(sh(d, "stat -c %i dst"));
        sh(d, "mkdir dst/empty && mv -T dst/moved dst/empty"); // over an empty directory
        assertThat(sh(d, "stat -c %h dst")).isEqualTo("3");
        assertThat(sh(d, "stat -c %h .")).isEqualTo("4");
        // find(1) walks it whole, whatever it concludes from the counts
        assertThat(sh(d, "find . -type d | sort")).isEqualTo(".\n./dst\n./dst/empty\n./src");
    }

    /** The uid this JVM runs as. */
    static long uid() {
        return new com.sun.security.auth.module.UnixSystem().getUid();
    }
}
