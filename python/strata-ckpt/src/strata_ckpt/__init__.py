"""Checkpoint generations on a Strata mount: commit, status, latest, wait, pin.

A checkpoint root is a directory with ``profile=checkpoint``; each generation is
a direct subdirectory written by many ranks at once. Committing a generation
tells the mount that every file is complete, checks the files against the list
the writer expected, and makes the generation the one ``latest`` returns.

The package needs only the standard library. The PyTorch DCP integration is in
``strata_ckpt.dcp`` and is imported only when asked for.
"""

from .core import (
    DURABILITY_ORDER,
    LEVELS,
    CheckpointError,
    CommitError,
    Generation,
    NotOnStrataError,
    commit,
    commit_value,
    expected_sizes,
    generations,
    latest,
    normalize_expected,
    parse_list,
    parse_status,
    pin,
    reached,
    status,
    status_text,
    wait,
    write_result_extents,
)

__version__ = "0.1.0"

__all__ = [
    "DURABILITY_ORDER",
    "LEVELS",
    "CheckpointError",
    "CommitError",
    "Generation",
    "NotOnStrataError",
    "commit",
    "commit_value",
    "expected_sizes",
    "generations",
    "latest",
    "normalize_expected",
    "parse_list",
    "parse_status",
    "pin",
    "reached",
    "status",
    "status_text",
    "wait",
    "write_result_extents",
]
