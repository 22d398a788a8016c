package io.strata.l1;

/** The NVMe fault point names as compile-time constants (for annotations). */
final class NvmeStoreFaults {
    static final String BLOCK_WRITE = "l1.nvme.block-write";
    static final String BLOCK_SYNC = "l1.nvme.block-sync";
    static final String INDEX_COMMIT = "l1.nvme.index-commit";

    private NvmeStoreFaults() {
    }
}
