package io.strata.storage.engine;

import io.strata.protocol.storage.UpdateKind;
import io.netty.buffer.Unpooled;
import io.strata.core.ChunkId;
import io.strata.core.fault.Fault;
import io.strata.core.fault.FaultPoint;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Child process of {@link EngineCrashTest}: commits version 1 of a chunk (all bytes 1), writes a
 * marker file, arms a crash at the fault point named in args[1], then writes version 2 (all
 * bytes 2, as pending when args[2] is "pending", else committed) and halts where the crash fires.
 */
public final class EngineCrashChild {
    private EngineCrashChild() {
    }

    public static void main(String[] args) throws Exception {
        Path dir = Path.of(args[0]);
        FaultPoint point = FaultPoint.of(args[1]);
        boolean pending = args.length > 2 && args[2].equals("pending");
        EngineFixture f = new EngineFixture(dir, 11);
        ChunkId id = EngineCrashTest.CHUNK;
        byte[] one = new byte[EngineCrashTest.SIZE];
        java.util.Arrays.fill(one, (byte) 1);
        f.write(id, EngineCrashTest.SIZE, 0, one);
        Files.writeString(dir.resolve("v1.done"), "ok");
        f.ctx.faults().arm(point, new Fault.Crash());
        byte[] two = new byte[EngineCrashTest.SIZE];
        java.util.Arrays.fill(two, (byte) 2);
        f.update(id, EngineCrashTest.SIZE, new Update(UpdateKind.WRITE, 0, two.length, EngineFixture.req()),
                Unpooled.wrappedBuffer(two), !pending);
        Files.writeString(dir.resolve("v2.done"), "ok");
        System.out.println("no crash at " + point);
        Runtime.getRuntime().halt(0);
    }
}
