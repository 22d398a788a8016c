"""A real torch.distributed.checkpoint save and load through StrataStorageWriter/Reader.

Single process, no process group. ``LocalDcpTest`` runs wherever torch is
importable, with the mount's attributes faked, and checks that the file list
the writer commits matches what torch put on disk. ``MountDcpTest`` also needs
STRATA_CKPT_ROOT and saves into a real generation.
"""

from __future__ import annotations

import os
import tempfile
import unittest
import warnings
from typing import Any, Dict

import support

import strata_ckpt
from strata_ckpt import core
from test_unit import FakeMount

HAVE_TORCH = support.torch_importable()


def _dcp() -> Any:
    try:
        import torch.distributed.checkpoint as dcp
    except ImportError:  # torch 1.13
        import torch.distributed._shard.checkpoint as dcp  # type: ignore[no-redef]
    return dcp


def _save(state_dict: Dict[str, Any], writer: Any) -> None:
    dcp = _dcp()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "assuming the intent is to save in a single process"
        if hasattr(dcp, "save"):
            dcp.save(state_dict, storage_writer=writer)
        else:
            dcp.save_state_dict(state_dict, storage_writer=writer, no_dist=True)


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


class _RoundTrip:
    """Save a model's state_dict plus a plain value, load it into a differently initialised model."""

    def round_trip(self: Any, gen: str, **writer_kwargs: Any) -> None:
        import torch
        from strata_ckpt.dcp import StrataStorageReader, StrataStorageWriter

        saved = _model(1)
        _save({"model": saved.state_dict(), "step": 1234},
              StrataStorageWriter(gen, level="l2", **writer_kwargs))

        loaded = _model(2)
        target = {"model": loaded.state_dict(), "step": 0}
        self.assertFalse(torch.equal(target["model"]["0.weight"], saved.state_dict()["0.weight"]))
        _load(target, StrataStorageReader(gen))
        loaded.load_state_dict(target["model"])
        for key, value in saved.state_dict().items():
            self.assertTrue(torch.equal(loaded.state_dict()[key], value), key)
        self.assertEqual(target["step"], 1234)


@unittest.skipUnless(HAVE_TORCH, support.TORCH_SKIP)
class LocalDcpTest(unittest.TestCase, _RoundTrip):
    def setUp(self) -> None:
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)
        self.root = self.tmp.name

    def test_committed_list_matches_the_files(self) -> None:
        for name, kwargs in (("one-file", {}), ("file-per-item", {"single_file_per_rank": False})):
            with self.subTest(name):
                gen = os.path.join(self.root, name)
                os.mkdir(gen)
                mount = FakeMount({self.root, gen})
                with mount.patch():
                    self.round_trip(gen, **kwargs)
                self.assertEqual(len(mount.set_calls), 1)
                path, attr, value = mount.set_calls[0]
                self.assertEqual((path, attr), (gen, core.XATTR_COMMIT))
                lines = value.decode().split("\n")
                self.assertEqual(lines[0], "l2")
                listed = {p: int(s) for p, s in (line.split("\t") for line in lines[1:])}
                on_disk = {f: os.stat(os.path.join(gen, f)).st_size for f in os.listdir(gen)}
                self.assertEqual(listed, on_disk)
                self.assertIn(".metadata", listed)
                if kwargs:
                    self.assertGreater(len(listed), 2)

    def test_latest_reader_without_commit(self) -> None:
        from strata_ckpt.dcp import latest_reader

        mount = FakeMount({self.root})
        with mount.patch():
            with self.assertRaises(FileNotFoundError):
                latest_reader(self.root)


@unittest.skipUnless(HAVE_TORCH, support.TORCH_SKIP)
@support.needs_mount
class MountDcpTest(unittest.TestCase, _RoundTrip):
    def test_save_commit_load(self) -> None:
        from strata_ckpt.dcp import latest_reader

        root = os.path.abspath(support.ckpt_root() or "")
        gen = os.path.join(root, f"dcp-{os.getpid()}")
        self.round_trip(gen)
        st = strata_ckpt.status(gen)
        self.assertEqual(st["state"], "committed")
        self.assertEqual(st["files"], len(os.listdir(gen)))
        self.assertEqual(strata_ckpt.latest(root), gen)
        self.assertEqual(os.fspath(latest_reader(root).path), gen)


if __name__ == "__main__":
    unittest.main()
