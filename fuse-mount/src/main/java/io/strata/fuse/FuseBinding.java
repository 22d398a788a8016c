package io.strata.fuse;

import java.nio.file.Path;
import java.util.List;

/** A libfuse binding over {@link FuseOps}: libfuse2 ({@link StrataFuse}) or libfuse3 ({@code StrataFuse3}). */
interface FuseBinding {
    /** Mounts at {@code dir} with libfuse options {@code args} and runs libfuse's loop until the file system is unmounted. */
    void run(Path dir, List<String> args, boolean debug) throws Exception;
}
