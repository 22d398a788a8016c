"""A real torch.distributed.checkpoint save and load through StrataStorageWriter/Reader.

Single process, no process group, real torch. ``TorchTest`` needs only torch;
``MountDcpTest`` also needs STRATA_CKPT_ROOT and saves into real generations:
the files and sizes the writer commits are the ones torch put on disk, a
commit the mount refuses fails the save, and the reader finds the newest
committed generation. Without torch everything here is skipped.

Not tested, because no real run here can reach them: a save with so many files
that the list no longer fits in one extended attribute (about 2,500 files,
minutes of file creation on a test mount), and safetensors serialization (needs
the ``safetensors`` package).
"""

from __future__ import annotations

import errno
import inspect
import os
import tempfile
import unittest
import warnings
from typing import Any, Dict, List, Optional

import support

import strata_ckpt
from strata_ckpt.core import XATTR_ERROR

HAVE_TORCH = support.torch_importable()


def _dcp() -> Any:
    try:
        import torch.distributed.checkpoint as dcp
    except ImportError:  # torch 1.13
        import torch.distributed._shard.checkpoint as dcp  # type: ignore[no-redef]
    return dcp


def _save(state_dict: Dict[str, Any], writer: Any, **kwargs: Any) -> List[warnings.WarningMessage]:
    """``dcp.save`` in this process; returns the warnings the save raised."""
    dcp = _dcp()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")  # torch warns "assuming the intent is to save in a single process"
        if hasattr(dcp, "save"):
            dcp.save(state_dict, storage_writer=writer, **kwargs)
        else:
            dcp.save_state_dict(state_dict, storage_writer=writer, no_dist=True, **kwargs)
    return list(caught)


def _load(state_dict: Dict[str, Any], reader: Any) -> None:
    dcp = _dcp()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if hasattr(dcp, "load"):
            dcp.load(state_dict, storage_reader=reader)
        else:
            dcp.load_state_dict(state_dict, storage_reader=reader, no_dist=True)


def _model(seed: int) -> Any:
    import torch
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))


def _on_disk(gen: str) -> Dict[str, int]:
    return {f: os.stat(os.path.join(gen, f)).st_size for f in os.listdir(gen)}


def _commit_error(failure: BaseException) -> Optional[strata_ckpt.CommitError]:
    """The CommitError behind a failed save: torch reports a failure in ``finish`` wrapped in its
    CheckpointException (a BaseException), keyed by rank."""
    if isinstance(failure, strata_ckpt.CommitError):
        return failure
    for exc, *_ in getattr(failure, "failures", {}).values():
        if isinstance(exc, strata_ckpt.CommitError):
            return exc
    cause = failure.__cause__ or failure.__context__
    return _commit_error(cause) if cause is not None else None


def _writer_classes() -> Any:
    """Subclasses of the real writer for the tests (made on demand: defining them imports torch)."""
    from strata_ckpt.dcp import StrataStorageWriter

    class RecordingWriter(StrataStorageWriter):  # type: ignore[misc]
        """The real writer; keeps the file list it computed, to compare with what is on disk."""

        committed_list: Optional[Dict[str, int]] = None

        def expected_files(self, results: Any) -> Dict[str, int]:
            self.committed_list = dict(super().expected_files(results))
            return self.committed_list

    class LosingWriter(StrataStorageWriter):  # type: ignore[misc]
        """The real writer on a rank whose data did not fully land: a shard loses its tail before the commit."""

        lost: Optional[str] = None

        def finish(self, metadata: Any, results: Any, *args: Any, **kwargs: Any) -> None:
            gen = os.fspath(self.path)
            self.lost = sorted(f for f in os.listdir(gen) if f.endswith(".distcp"))[0]
            path = os.path.join(gen, self.lost)
            os.truncate(path, os.stat(path).st_size - 8)
            super().finish(metadata, results, *args, **kwargs)

    return RecordingWriter, LosingWriter


class _RoundTrip:
    """Save a model's state_dict plus a plain value, load it into a differently initialised model."""

    def round_trip(self: Any, gen: str, writer: Any) -> None:
        import torch
        from strata_ckpt.dcp import StrataStorageReader

        saved = _model(1)
        _save({"model": saved.state_dict(), "step": 1234}, writer)

        loaded = _model(2)
        target = {"model": loaded.state_dict(), "step": 0}
        self.assertFalse(torch.equal(target["model"]["0.weight"], saved.state_dict()["0.weight"]))
        _load(target, StrataStorageReader(gen))
        loaded.load_state_dict(target["model"])
        for key, value in saved.state_dict().items():
            self.assertTrue(torch.equal(loaded.state_dict()[key], value), key)
        self.assertEqual(target["step"], 1234)


@unittest.skipUnless(HAVE_TORCH, support.TORCH_SKIP)
class TorchTest(unittest.TestCase):
    """The writer's own checks, and reading torch's write results, with real torch and no mount."""

    def test_bad_level(self) -> None:
        from strata_ckpt.dcp import StrataStorageWriter

        with tempfile.TemporaryDirectory() as d:
            with self.assertRaises(ValueError):
                StrataStorageWriter(os.path.join(d, "gen"), level="l1")

    def test_extents_of_torch_write_results(self) -> None:
        from torch.distributed.checkpoint.filesystem import _StorageInfo
        from torch.distributed.checkpoint.metadata import MetadataIndex
        from torch.distributed.checkpoint.storage import WriteResult

        results = [
            [WriteResult(MetadataIndex("a"), 100, _StorageInfo("__0_0.distcp", 0, 100)),
             WriteResult(MetadataIndex("b"), 28, _StorageInfo("__0_0.distcp", 100, 28))],
            [WriteResult(MetadataIndex("c"), 64, _StorageInfo("__1_0.distcp", 0, 64)),
             WriteResult(MetadataIndex("d"), 1, None)],
            [],
        ]
        extents = strata_ckpt.write_result_extents(results)
        self.assertEqual(extents, [("__0_0.distcp", 0, 100), ("__0_0.distcp", 100, 28), ("__1_0.distcp", 0, 64)])
        self.assertEqual(strata_ckpt.expected_sizes(extents), {"__0_0.distcp": 128, "__1_0.distcp": 64})


@unittest.skipUnless(HAVE_TORCH, support.TORCH_SKIP)
@support.needs_mount
class MountDcpTest(unittest.TestCase, _RoundTrip):
    def setUp(self) -> None:
        self.root = os.path.abspath(support.ckpt_root() or "")

    def test_committed_list_is_the_files_on_disk(self) -> None:
        recording_writer, _ = _writer_classes()
        for name, kwargs in (("one-file", {}), ("file-per-item", {"single_file_per_rank": False})):
            with self.subTest(name):
                gen = os.path.join(self.root, support.unique_name(f"dcp-{name}"))
                writer = recording_writer(gen, level="l2", **kwargs)
                self.round_trip(gen, writer)
                on_disk = _on_disk(gen)
                self.assertEqual(writer.committed_list, on_disk)
                self.assertIn(".metadata", on_disk)
                if kwargs:
                    self.assertGreater(len(on_disk), 2)
                st = strata_ckpt.status(gen)
                self.assertEqual((st["state"], st["level"]), ("committed", "l2"))
                self.assertEqual((st["files"], st["bytes"]), (len(on_disk), sum(on_disk.values())))

    def test_save_commit_load(self) -> None:
        from strata_ckpt.dcp import StrataStorageWriter, latest_reader

        gen = os.path.join(self.root, support.unique_name("dcp"))
        self.round_trip(gen, StrataStorageWriter(gen, level="l2"))
        st = strata_ckpt.status(gen)
        self.assertEqual(st["state"], "committed")
        self.assertEqual(st["files"], len(os.listdir(gen)))
        self.assertEqual(strata_ckpt.latest(self.root), gen)
        self.assertEqual(os.fspath(latest_reader(self.root).path), gen)

    def test_level_l3(self) -> None:
        from strata_ckpt.dcp import StrataStorageWriter

        gen = os.path.join(self.root, support.unique_name("dcp-l3"))
        _save({"model": _model(3).state_dict()}, StrataStorageWriter(gen, level="l3"))
        st = strata_ckpt.status(gen)
        self.assertEqual((st["state"], st["level"], st["durability"]), ("committed", "l3", "l3"))

    def test_refused_commit_fails_the_save(self) -> None:
        _, losing_writer = _writer_classes()
        gen = os.path.join(self.root, support.unique_name("dcp-lost"))
        writer = losing_writer(gen)
        try:
            _save({"model": _model(4).state_dict()}, writer)
        except BaseException as e:  # torch wraps it in CheckpointException, which is not an Exception
            if isinstance(e, KeyboardInterrupt):
                raise
            failure = _commit_error(e)
            self.assertIsNotNone(failure, f"the save failed, but not because of the commit: {e!r}")
        else:
            self.fail("the save succeeded although a shard lost its tail")
        assert failure is not None
        self.assertEqual(failure.errno, errno.EINVAL)
        self.assertEqual(failure.mount_message, os.getxattr(gen, XATTR_ERROR).decode().strip())
        self.assertIn(writer.lost, failure.mount_message or "")
        self.assertIn(f"{writer.lost} is ", str(failure))
        self.assertEqual(strata_ckpt.status(gen)["state"], "writing")
        self.assertNotEqual(strata_ckpt.latest(self.root), gen)

    def test_commits_the_path_dcp_reset_to(self) -> None:
        if "checkpoint_id" not in inspect.signature(_dcp().save).parameters:
            self.skipTest("this torch's dcp.save has no checkpoint_id")
        recording_writer, _ = _writer_classes()
        first = os.path.join(self.root, support.unique_name("dcp-first"))
        other = os.path.join(self.root, support.unique_name("dcp-other"))
        writer = recording_writer(first)
        _save({"model": _model(5).state_dict()}, writer, checkpoint_id=other)
        self.assertFalse(os.path.exists(first), "the writer's first path was written")
        self.assertEqual(strata_ckpt.status(other)["state"], "committed")
        self.assertEqual(writer.committed_list, _on_disk(other))
        self.assertEqual(strata_ckpt.latest(self.root), other)

    def test_without_collectives_the_caller_commits(self) -> None:
        from strata_ckpt.dcp import StrataStorageWriter

        if "use_collectives" not in inspect.signature(_dcp().save).parameters:
            self.skipTest("this torch's dcp.save has no use_collectives")
        gen = os.path.join(self.root, support.unique_name("dcp-nocoll"))
        caught = _save({"model": _model(6).state_dict()}, StrataStorageWriter(gen), use_collectives=False)
        self.assertTrue(any("is not committed" in str(w.message) for w in caught), [str(w.message) for w in caught])
        self.assertEqual(strata_ckpt.status(gen)["state"], "writing")
        self.assertNotEqual(strata_ckpt.latest(self.root), gen)
        # what the warning tells the caller to do, once every rank is done
        on_disk = _on_disk(gen)
        strata_ckpt.commit(gen, "l2", on_disk)
        st = strata_ckpt.status(gen)
        self.assertEqual((st["state"], st["files"], st["bytes"]), ("committed", len(on_disk), sum(on_disk.values())))

    def test_latest_reader(self) -> None:
        import torch
        from strata_ckpt.dcp import StrataStorageReader, StrataStorageWriter, latest_reader

        root = support.new_root("dcp-root")
        with self.assertRaises(FileNotFoundError) as cm:
            latest_reader(root)
        self.assertEqual(cm.exception.errno, errno.ENOENT)
        self.assertEqual(cm.exception.filename, root)

        for step in (1, 2):
            gen = os.path.join(root, f"step-{step}")
            _save({"w": torch.full((3,), float(step))}, StrataStorageWriter(gen))
        os.mkdir(os.path.join(root, "step-3"))  # being written: not what a restart loads
        reader = latest_reader(root)
        self.assertIsInstance(reader, StrataStorageReader)
        self.assertEqual(os.fspath(reader.path), os.path.join(root, "step-2"))
        target = {"w": torch.zeros(3)}
        _load(target, reader)
        self.assertTrue(torch.equal(target["w"], torch.full((3,), 2.0)))


if __name__ == "__main__":
    unittest.main()
