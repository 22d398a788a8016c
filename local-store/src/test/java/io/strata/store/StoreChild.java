package io.strata.store;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.strata.core.fault.Fault;
import io.strata.core.fault.FaultInjector;
import io.strata.core.fault.FaultPoint;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Child process of {@link StoreCrashIT}.
 *
 * <ul>
 * <li>{@code write DIR POINT}: arms a crash (halt, as kill -9) at {@code POINT} ("none": no
 * crash) and writes {@link #NEW} crash-safely over {@code DIR/f}; exits 0 when nothing halted it.</li>
 * <li>{@code lock DIR}: opens {@code DIR} as a store, writes {@code DIR/locked} and waits to be killed.</li>
 * </ul>
 */
public final class StoreChild {
    static final String NEW = "the new bytes, all of them, and a few more to make the halves differ";

    private StoreChild() {
    }

    public static void main(String[] args) throws Exception {
        Path dir = Path.of(args[1]);
        if (args[0].equals("lock")) {
            StoreDir held = StoreDir.open(dir, "store.lock", "in use", null);
            Files.writeString(dir.resolve("locked"), "ok");
            Thread.sleep(120_000);
            held.close();
            return;
        }
        FaultInjector faults = new FaultInjector(1);
        if (!args[2].equals("none")) {
            faults.arm(FaultPoint.of(args[2]), new Fault.Crash());
        }
        AtomicFiles files = new AtomicFiles(faults, new AtomicFiles.Faults(AtomicFilesTest.WRITE, AtomicFilesTest.SYNC,
                AtomicFilesTest.RENAME));
        ByteBuf b = Unpooled.copiedBuffer(NEW, StandardCharsets.UTF_8);
        files.write(dir.resolve("f"), b, true);
        b.release();
        Runtime.getRuntime().halt(0);
    }
}
