"""PyTorch Distributed Checkpoint (DCP) storage for Strata checkpoint roots.

``StrataStorageWriter`` writes exactly like torch's ``FileSystemWriter`` and
then, on the coordinator rank, commits the generation with the list of files
and sizes the ranks reported. The sizes come from torch's own record of where
each item was written, not from the file system, so a rank whose data did not
land in full makes the commit fail instead of producing a checkpoint that only
breaks when it is loaded.

Importing this module imports torch; ``import strata_ckpt`` alone never does.
"""

from __future__ import annotations

import errno
import os
import warnings
from typing import Any, Dict, Iterable

try:
    import torch
except ImportError as _e:
    raise ImportError(
        "strata_ckpt.dcp needs PyTorch, which is not importable in this Python "
        "(install torch >= 2.0; the rest of strata_ckpt works without it, e.g. "
        "strata_ckpt.commit after your own save)") from _e

try:
    from torch.distributed.checkpoint import FileSystemReader, FileSystemWriter
except ImportError as _e:
    try:  # torch 1.13 kept the same planner-based API under a private name
        from torch.distributed._shard.checkpoint import FileSystemReader, FileSystemWriter
    except ImportError:
        raise ImportError(
            f"strata_ckpt.dcp needs torch.distributed.checkpoint, which torch {torch.__version__} "
            "does not provide here (a build without torch.distributed?)") from _e

from .core import (
    PathLike,
    XATTR_VALUE_MAX,
    _check_level,
    commit,
    commit_value,
    expected_sizes,
    latest,
    write_result_extents,
)

__all__ = ["StrataStorageWriter", "StrataStorageReader", "latest_reader"]

METADATA_FILE = ".metadata"


class StrataStorageWriter(FileSystemWriter):  # type: ignore[misc]
    """A ``FileSystemWriter`` whose save ends with a Strata commit of the generation directory.

    ``path`` is the generation: a new, direct subdirectory of a checkpoint root.
    ``level`` is ``l2`` (return once the files are durable in the L2 pool) or ``l3``
    (return once they are durable in L3). Other keyword arguments go to
    ``FileSystemWriter`` unchanged. The commit runs in ``finish``, which DCP
    calls on the coordinator rank only, after every rank wrote its files.
    """

    def __init__(self, path: PathLike, level: str = "l2", **kwargs: Any) -> None:
        super().__init__(path, **kwargs)
        self.level = _check_level(level)

    def expected_files(self, results: Iterable[Iterable[Any]]) -> Dict[str, int]:
        """Each data file's size as DCP recorded it, plus ``.metadata`` as written by ``finish``."""
        gen = os.fspath(self.path)
        extents = write_result_extents(results)
        fmt = getattr(self, "serialization_format", None)
        if fmt is not None and getattr(fmt, "value", fmt) != "torch_save":
            # Formats such as safetensors record tensor offsets inside their own
            # container, not file positions, so only the file names are trusted.
            sizes = {p: os.stat(os.path.join(gen, p)).st_size for p, _, _ in extents}
        else:
            sizes = expected_sizes(extents)
        sizes[METADATA_FILE] = os.stat(os.path.join(gen, METADATA_FILE)).st_size
        return sizes

    def finish(self, metadata: Any, results: Any, *args: Any, **kwargs: Any) -> None:
        """Write ``.metadata`` (torch), then commit the generation with the expected file list."""
        super().finish(metadata, results, *args, **kwargs)
        if getattr(self, "use_collectives", True) is False:
            # Without collectives every rank finishes on its own with its own
            # rank-local metadata, so no rank knows when the generation is whole.
            warnings.warn("StrataStorageWriter: saved with use_collectives=False, so the generation "
                          f"{os.fspath(self.path)} is not committed; call strata_ckpt.commit() once "
                          "every rank has finished", stacklevel=2)
            return
        expected: Any = self.expected_files(results)
        if len(commit_value(self.level, expected)) > XATTR_VALUE_MAX:
            warnings.warn(f"StrataStorageWriter: {len(expected)} files are too many to list in one "
                          "commit (extended attribute values are limited to 64 KiB); committing "
                          "without checking their sizes", stacklevel=2)
            expected = None
        commit(self.path, self.level, expected)


class StrataStorageReader(FileSystemReader):  # type: ignore[misc]
    """A ``FileSystemReader``: committed generations are plain files, so reading needs nothing extra."""

    def __init__(self, path: PathLike, **kwargs: Any) -> None:
        super().__init__(path, **kwargs)


def latest_reader(root: PathLike, **kwargs: Any) -> StrataStorageReader:
    """A reader for the newest committed generation under ``root``.

    Raises FileNotFoundError when nothing under ``root`` is committed yet, so a
    fresh job can catch it and start from scratch.
    """
    gen = latest(root)
    if gen is None:
        raise FileNotFoundError(errno.ENOENT, "no committed checkpoint generation under this root",
                                os.fspath(root))
    return StrataStorageReader(gen, **kwargs)
