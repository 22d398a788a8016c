"""Checkpoint generations on a real Strata mount.

Needs STRATA_CKPT_ROOT: a fresh, empty directory on a Strata mount with
``profile=checkpoint`` set by the caller. Each test makes its own generations
under it, named with this process's id so a rerun on the same root does not
collide.
"""

from __future__ import annotations

import errno
import multiprocessing
import os
import random
import time
import unittest
from datetime import datetime
from typing import Any, Dict

import support

import strata_ckpt

WRITERS = 4


def _rank_bytes(rank: int, size: int) -> bytes:
    return random.Random(rank).randbytes(size)


def _write_rank(gen: str, rank: int, size: int) -> None:
    """One writer process: writes its own file and closes it, like a rank saving its shard."""
    with open(os.path.join(gen, f"rank-{rank}.bin"), "wb") as f:
        f.write(_rank_bytes(rank, size))


def _write_slowly(path: str, first: bytes, rest: bytes, opened: "multiprocessing.synchronize.Event",
                  hold_seconds: float) -> None:
    """A writer that is still busy when the commit arrives and closes a few seconds later."""
    with open(path, "wb") as f:
        f.write(first)
        f.flush()
        opened.set()
        time.sleep(hold_seconds)
        f.write(rest)


@support.needs_mount
class MountTest(unittest.TestCase):
    root: str
    ctx: Any

    @classmethod
    def setUpClass(cls) -> None:
        cls.root = os.path.abspath(support.ckpt_root() or "")
        cls.ctx = multiprocessing.get_context("fork")

    def new_gen(self, name: str) -> str:
        gen = os.path.join(self.root, f"{name}-{os.getpid()}")
        os.mkdir(gen)
        return gen

    def write(self, gen: str, name: str, data: bytes) -> Dict[str, int]:
        with open(os.path.join(gen, name), "wb") as f:
            f.write(data)
        return {name: len(data)}

    def test_many_writers_commit_l2(self) -> None:
        gen = self.new_gen("many-writers")
        sizes = {f"rank-{r}.bin": 2 * 1024 * 1024 + r * 12345 for r in range(WRITERS)}
        procs = [self.ctx.Process(target=_write_rank, args=(gen, r, sizes[f"rank-{r}.bin"]))
                 for r in range(WRITERS)]
        for p in procs:
            p.start()
        for p in procs:
            p.join()
            self.assertEqual(p.exitcode, 0)

        strata_ckpt.commit(gen, "l2", sizes)

        st = strata_ckpt.status(gen)
        self.assertEqual(st["state"], "committed")
        self.assertTrue(strata_ckpt.reached(st["durability"], "l2"), st["durability"])
        self.assertEqual(st["level"], "l2")
        self.assertEqual(st["files"], WRITERS)
        self.assertEqual(st["bytes"], sum(sizes.values()))
        self.assertGreater(st["seq"], 0)
        self.assertIsInstance(st["committed"], datetime)
        self.assertEqual(strata_ckpt.latest(self.root), gen)
        self.assertEqual(strata_ckpt.generations(self.root)[-1].name, os.path.basename(gen))
        for r in range(WRITERS):
            with open(os.path.join(gen, f"rank-{r}.bin"), "rb") as f:
                self.assertEqual(f.read(), _rank_bytes(r, sizes[f"rank-{r}.bin"]), f"rank {r}")

    def test_recommit(self) -> None:
        gen = self.new_gen("recommit")
        expected = self.write(gen, "a.bin", b"a" * 1000)
        expected.update(self.write(gen, "b.bin", b"b" * 2000))
        strata_ckpt.commit(gen, "l2", expected)
        strata_ckpt.commit(gen, "l2", expected)  # a coordinator retrying after a timeout must not fail
        strata_ckpt.commit(gen, "l2", {"a.bin": 1000})  # a subset of what was committed is still what it holds
        with self.assertRaises(strata_ckpt.CommitError) as cm:
            strata_ckpt.commit(gen, "l2", {"a.bin": 999})
        self.assertEqual(cm.exception.errno, errno.EROFS)
        self.assertEqual(strata_ckpt.status(gen)["files"], 2)

    def test_missing_expected_file(self) -> None:
        gen = self.new_gen("missing")
        expected = self.write(gen, "rank-0.bin", b"0" * 4096)
        with self.assertRaises(strata_ckpt.CommitError) as cm:
            strata_ckpt.commit(gen, "l2", dict(expected, **{"rank-1.bin": 4096}))
        self.assertEqual(cm.exception.errno, errno.ENOENT)
        self.assertIn("rank-1.bin", str(cm.exception))
        self.assertEqual(strata_ckpt.status(gen)["state"], "writing")
        self.assertNotEqual(strata_ckpt.latest(self.root), gen)
        # once the missing rank shows up, the same commit goes through
        expected.update(self.write(gen, "rank-1.bin", b"1" * 4096))
        strata_ckpt.commit(gen, "l2", expected)
        self.assertEqual(strata_ckpt.latest(self.root), gen)

    def test_size_mismatch(self) -> None:
        gen = self.new_gen("short")
        self.write(gen, "rank-0.bin", b"0" * 4000)
        with self.assertRaises(strata_ckpt.CommitError) as cm:
            strata_ckpt.commit(gen, "l2", {"rank-0.bin": 4096})
        self.assertEqual(cm.exception.errno, errno.EINVAL)
        self.assertIn("rank-0.bin", str(cm.exception))
        self.assertEqual(strata_ckpt.status(gen)["state"], "writing")

    def test_commit_waits_for_a_writer_that_closes(self) -> None:
        gen = self.new_gen("slow-writer")
        first, rest = b"f" * 100_000, b"r" * 50_000
        opened = self.ctx.Event()
        writer = self.ctx.Process(target=_write_slowly,
                                  args=(os.path.join(gen, "slow.bin"), first, rest, opened, 3.0))
        writer.start()
        self.addCleanup(writer.join)
        self.assertTrue(opened.wait(30), "writer did not start")
        start = time.monotonic()
        strata_ckpt.commit(gen, "l2", {"slow.bin": len(first) + len(rest)})
        self.assertGreaterEqual(time.monotonic() - start, 2.0, "commit returned while the file was open")
        st = strata_ckpt.status(gen)
        self.assertEqual((st["state"], st["files"], st["bytes"]), ("committed", 1, len(first) + len(rest)))

    def test_commit_refuses_a_writer_that_never_closes(self) -> None:
        gen = self.new_gen("stuck-writer")
        f = open(os.path.join(gen, "stuck.bin"), "wb")
        try:
            f.write(b"s" * 10_000)
            f.flush()
            with self.assertRaises(strata_ckpt.CommitError) as cm:
                strata_ckpt.commit(gen, "l2")
            self.assertEqual(cm.exception.errno, errno.EBUSY)
            self.assertEqual(strata_ckpt.status(gen)["state"], "writing")
        finally:
            f.close()
        strata_ckpt.commit(gen, "l2", {"stuck.bin": 10_000})
        self.assertEqual(strata_ckpt.status(gen)["state"], "committed")

    def test_uncommitted_generation_is_not_latest(self) -> None:
        gen1 = self.new_gen("gen-1")
        strata_ckpt.commit(gen1, "l2", self.write(gen1, "model.bin", b"1" * 5000))
        gen2 = self.new_gen("gen-2")
        self.write(gen2, "model.bin", b"2" * 5000)

        self.assertEqual(strata_ckpt.latest(self.root), gen1)
        self.assertEqual(strata_ckpt.status(gen2)["state"], "writing")
        self.assertNotIn(os.path.basename(gen2), [g.name for g in strata_ckpt.generations(self.root)])
        with self.assertRaises(strata_ckpt.CheckpointError) as cm:
            strata_ckpt.wait(gen2, "l2")
        self.assertEqual(cm.exception.errno, errno.EINVAL)

    def test_wait_for_l3(self) -> None:
        gen = self.new_gen("to-l3")
        strata_ckpt.commit(gen, "l2", self.write(gen, "model.bin", os.urandom(1024 * 1024)))
        strata_ckpt.wait(gen, "l3")
        st = strata_ckpt.status(gen)
        self.assertEqual(st["durability"], "l3")
        self.assertIsInstance(st["l3"], datetime)
        self.assertGreaterEqual(st["l3"], st["committed"])
        entry = [g for g in strata_ckpt.generations(self.root) if g.name == os.path.basename(gen)]
        self.assertEqual([g.durability for g in entry], ["l3"])

    def test_pin(self) -> None:
        gen = self.new_gen("pinned")
        strata_ckpt.commit(gen, "l2", self.write(gen, "model.bin", b"p" * 100))
        strata_ckpt.pin(gen)
        self.assertIs(strata_ckpt.status(gen)["pinned"], True)
        self.assertTrue([g for g in strata_ckpt.generations(self.root) if g.path == gen][0].pinned)
        strata_ckpt.pin(gen, on=False)
        self.assertIs(strata_ckpt.status(gen)["pinned"], False)


if __name__ == "__main__":
    unittest.main()
