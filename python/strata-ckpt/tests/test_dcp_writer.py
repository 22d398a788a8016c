"""The DCP writer's commit, checked where torch is absent by standing in minimal torch modules.

Only the parts of torch the writer touches are faked (FileSystemWriter's
constructor and ``finish``, which writes ``.metadata``); the real save and load
are in test_torch_dcp.py. Skipped when the real torch is importable, since the
fake must not shadow it.
"""

from __future__ import annotations

import os
import sys
import tempfile
import types
import unittest
import warnings
from collections import namedtuple
from pathlib import Path
from typing import Any, Dict
from unittest import mock

import support

from strata_ckpt import core
from test_unit import FakeMount

StorageInfo = namedtuple("StorageInfo", "relative_path offset length")
WriteResult = namedtuple("WriteResult", "index size_in_bytes storage_data")
METADATA_BYTES = b"pickled metadata stands here"


class _FakeFileSystemWriter:
    def __init__(self, path: Any, single_file_per_rank: bool = True, sync_files: bool = True,
                 **kwargs: Any) -> None:
        self.path = Path(path)
        self.kwargs = kwargs

    def reset(self, checkpoint_id: Any = None) -> None:
        if checkpoint_id:
            self.path = Path(checkpoint_id)

    def finish(self, metadata: Any, results: Any) -> None:
        (self.path / ".metadata.tmp").write_bytes(METADATA_BYTES)
        (self.path / ".metadata.tmp").rename(self.path / ".metadata")


class _FakeFileSystemReader:
    def __init__(self, path: Any) -> None:
        self.path = Path(path)


def _fake_torch() -> Dict[str, types.ModuleType]:
    torch = types.ModuleType("torch")
    torch.__version__ = "0.0-fake"  # type: ignore[attr-defined]
    dist = types.ModuleType("torch.distributed")
    ckpt = types.ModuleType("torch.distributed.checkpoint")
    ckpt.FileSystemWriter = _FakeFileSystemWriter  # type: ignore[attr-defined]
    ckpt.FileSystemReader = _FakeFileSystemReader  # type: ignore[attr-defined]
    torch.distributed = dist  # type: ignore[attr-defined]
    dist.checkpoint = ckpt  # type: ignore[attr-defined]
    return {"torch": torch, "torch.distributed": dist, "torch.distributed.checkpoint": ckpt}


@unittest.skipIf(support.torch_importable(), "real torch is importable; test_torch_dcp.py covers the writer")
class FakeTorchWriterTest(unittest.TestCase):
    def setUp(self) -> None:
        sys.modules.pop("strata_ckpt.dcp", None)
        patcher = mock.patch.dict(sys.modules, _fake_torch())
        patcher.start()
        self.addCleanup(patcher.stop)
        self.addCleanup(sys.modules.pop, "strata_ckpt.dcp", None)
        import strata_ckpt.dcp as dcp
        self.dcp = dcp

        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)
        self.root = self.tmp.name
        self.gen = os.path.join(self.root, "step-100")
        os.mkdir(self.gen)
        self.mount = FakeMount({self.root, self.gen})
        mount_patcher = self.mount.patch()
        mount_patcher.start()
        self.addCleanup(mount_patcher.stop)

    def results(self) -> list:
        with open(os.path.join(self.gen, "__0_0.distcp"), "wb") as f:
            f.write(b"x" * 150)
        with open(os.path.join(self.gen, "__1_0.distcp"), "wb") as f:
            f.write(b"y" * 70)
        return [
            [WriteResult("a", 100, StorageInfo("__0_0.distcp", 0, 100)),
             WriteResult("b", 50, StorageInfo("__0_0.distcp", 100, 50))],
            [WriteResult("c", 70, StorageInfo("__1_0.distcp", 0, 70))],
        ]

    def test_finish_commits_with_sizes_from_results(self) -> None:
        writer = self.dcp.StrataStorageWriter(self.gen, level="l3", sync_files=False)
        writer.finish(metadata=object(), results=self.results())
        expected = f"l3\n.metadata\t{len(METADATA_BYTES)}\n__0_0.distcp\t150\n__1_0.distcp\t70".encode()
        self.assertEqual(self.mount.set_calls, [(self.gen, core.XATTR_COMMIT, expected)])

    def test_commits_the_path_dcp_reset_to(self) -> None:
        other = os.path.join(self.root, "step-200")
        os.mkdir(other)
        self.mount.strata.add(other)
        writer = self.dcp.StrataStorageWriter(self.gen)
        writer.reset(other)
        writer.finish(object(), [])
        self.assertEqual(self.mount.set_calls,
                         [(other, core.XATTR_COMMIT, f"l2\n.metadata\t{len(METADATA_BYTES)}".encode())])

    def test_refused_commit_fails_the_save(self) -> None:
        self.mount.set_errors[(self.gen, core.XATTR_COMMIT)] = 22  # EINVAL
        writer = self.dcp.StrataStorageWriter(self.gen)
        with self.assertRaises(core.CommitError):
            writer.finish(object(), self.results())

    def test_without_collectives_no_commit(self) -> None:
        writer = self.dcp.StrataStorageWriter(self.gen)
        writer.use_collectives = False
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            writer.finish(object(), self.results())
        self.assertEqual(self.mount.set_calls, [])
        self.assertTrue(any("not committed" in str(w.message) for w in caught))

    def test_too_many_files_commits_without_the_list(self) -> None:
        results = [[WriteResult(i, 1, StorageInfo(f"__{i}_0.distcp", 0, 1000 + i))] for i in range(5000)]
        writer = self.dcp.StrataStorageWriter(self.gen)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            writer.finish(object(), results)
        self.assertEqual(self.mount.set_calls, [(self.gen, core.XATTR_COMMIT, b"l2")])
        self.assertTrue(any("too many" in str(w.message) for w in caught))

    def test_bad_level(self) -> None:
        with self.assertRaises(ValueError):
            self.dcp.StrataStorageWriter(self.gen, level="l1")

    def test_latest_reader(self) -> None:
        with self.assertRaises(FileNotFoundError):
            self.dcp.latest_reader(self.root)
        self.mount.attrs[(self.root, core.XATTR_LATEST)] = b"step-100"
        reader = self.dcp.latest_reader(self.root)
        self.assertIsInstance(reader, self.dcp.StrataStorageReader)
        self.assertEqual(Path(reader.path), Path(self.gen))


if __name__ == "__main__":
    unittest.main()
