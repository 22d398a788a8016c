"""Checkpoint generations, the library's errors and the command line, on a real Strata mount.

Needs STRATA_CKPT_ROOT: a fresh, empty directory on a Strata mount with
``profile=checkpoint`` set by the caller. Each test makes its own generations
under it, with unique names so a rerun on the same root does not collide, and
checks what a user sees: the status the mount reports, the files, the errno
and the mount's own message (``user.strata.ckpt.error``) of a refused commit,
the command's exit status and output.
"""

from __future__ import annotations

import dataclasses
import errno
import json
import multiprocessing
import os
import random
import subprocess
import sys
import tempfile
import time
import unittest
from datetime import datetime
from typing import Any, Dict, Optional, Tuple

import support

import strata_ckpt
from strata_ckpt.core import XATTR_ERROR

WRITERS = 4


def _rank_bytes(rank: int, size: int) -> bytes:
    return random.Random(rank).randbytes(size)


def _mount_error(gen: str) -> str:
    """The mount's message for the generation's last failed commit or wait, read as any user could."""
    return os.getxattr(gen, XATTR_ERROR).decode("utf-8").strip()


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
            self.assertIn("still open for writing", str(cm.exception))
            self.assertEqual(cm.exception.mount_message, _mount_error(gen))
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



def _write(gen: str, name: str, data: bytes) -> Dict[str, int]:
    path = os.path.join(gen, *name.split("/"))
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)
    return {name: len(data)}


@support.needs_mount
class LibraryTest(unittest.TestCase):
    """What the library returns and raises, as the mount answers it."""

    def setUp(self) -> None:
        self.root = os.path.abspath(support.ckpt_root() or "")
        self.gen = support.new_generation(self.root, "lib")

    def test_commit_reaches_the_level_asked(self) -> None:
        expected = _write(self.gen, "a.bin", b"12345")
        expected.update(_write(self.gen, "sub/b.bin", b"xy"))
        strata_ckpt.commit(self.gen, "l3", expected)
        st = strata_ckpt.status(self.gen)
        self.assertEqual((st["generation"], st["state"], st["level"], st["durability"]),
                         (os.path.basename(self.gen), "committed", "l3", "l3"))
        self.assertEqual((st["files"], st["bytes"]), (2, 7))
        self.assertIsInstance(st["l3"], datetime)
        with open(os.path.join(self.gen, "sub", "b.bin"), "rb") as f:
            self.assertEqual(f.read(), b"xy")

    def test_missing_expected_file(self) -> None:
        _write(self.gen, "rank-0.bin", b"12345")
        with self.assertRaises(strata_ckpt.CommitError) as cm:
            strata_ckpt.commit(self.gen, "l2", {"rank-0.bin": 5, "rank-3.bin": 5})
        e = cm.exception
        self.assertIsInstance(e, OSError)
        self.assertEqual(e.errno, errno.ENOENT)
        self.assertEqual(e.path, self.gen)
        self.assertEqual(e.mount_message, _mount_error(self.gen))
        self.assertIn("rank-3.bin", e.mount_message or "")
        self.assertNotIn("rank-0.bin", e.mount_message or "")
        self.assertIn(e.mount_message or "?", str(e))
        self.assertIn("missing: rank-3.bin", str(e))
        self.assertNotIn("rank-0.bin", str(e))
        self.assertIn("ENOENT", str(e))
        self.assertEqual(strata_ckpt.status(self.gen)["state"], "writing")

    def test_size_mismatch(self) -> None:
        _write(self.gen, "a.bin", b"123")
        with self.assertRaises(strata_ckpt.CommitError) as cm:
            strata_ckpt.commit(self.gen, "l2", {"a.bin": 4})
        e = cm.exception
        self.assertEqual(e.errno, errno.EINVAL)
        self.assertEqual(e.mount_message, _mount_error(self.gen))
        self.assertIn("a.bin", e.mount_message or "")
        self.assertIn(e.mount_message or "?", str(e))
        self.assertIn("a.bin is 3 bytes, expected 4", str(e))
        self.assertIn("EINVAL", str(e))
        self.assertEqual(strata_ckpt.status(self.gen)["state"], "writing")
        # fixing the list fixes the commit
        strata_ckpt.commit(self.gen, "l2", {"a.bin": 3})
        self.assertEqual(strata_ckpt.status(self.gen)["state"], "committed")

    def test_too_long_list_is_refused_before_the_mount(self) -> None:
        many = {f"dir/file-{i:06d}.distcp": 123456789 for i in range(3000)}
        with self.assertRaises(strata_ckpt.CommitError) as cm:
            strata_ckpt.commit(self.gen, "l2", many)
        self.assertEqual(cm.exception.errno, errno.E2BIG)
        self.assertIsNone(cm.exception.mount_message)
        # the mount was never asked: it has no failed commit to tell about
        with self.assertRaises(OSError) as no_error:
            os.getxattr(self.gen, XATTR_ERROR)
        self.assertEqual(no_error.exception.errno, errno.ENODATA)
        self.assertEqual(strata_ckpt.status(self.gen)["state"], "writing")

    def test_status_of_a_generation_being_written(self) -> None:
        _write(self.gen, "a.bin", b"a" * 10)
        st = strata_ckpt.status(self.gen)
        self.assertEqual(st["generation"], os.path.basename(self.gen))
        self.assertTrue(st["root"].endswith("/" + os.path.basename(self.root)), st["root"])
        self.assertEqual((st["state"], st["durability"], st["level"], st["seq"], st["pinned"]),
                         ("writing", "none", None, 0, False))
        self.assertIsInstance(st["started"], datetime)
        self.assertIsNone(st["committed"])
        self.assertEqual(strata_ckpt.parse_status(strata_ckpt.status_text(self.gen)), st)

    def test_directories_that_are_not_generations_or_roots(self) -> None:
        sub = os.path.join(self.gen, "sub")
        os.mkdir(sub)
        for call in (lambda: strata_ckpt.status(sub), lambda: strata_ckpt.status_text(sub)):
            with self.assertRaises(strata_ckpt.CheckpointError) as cm:
                call()
            self.assertNotIsInstance(cm.exception, strata_ckpt.NotOnStrataError)
            self.assertEqual(cm.exception.errno, errno.EINVAL)
            self.assertIn("is it a generation", str(cm.exception))
        for call in (lambda: strata_ckpt.latest(self.gen), lambda: strata_ckpt.generations(self.gen)):
            with self.assertRaises(strata_ckpt.CheckpointError) as cm:
                call()
            self.assertEqual(cm.exception.errno, errno.EINVAL)
            self.assertIn("is it a checkpoint root", str(cm.exception))
        with self.assertRaises(strata_ckpt.CommitError) as commit_cm:
            strata_ckpt.commit(sub)
        self.assertEqual(commit_cm.exception.errno, errno.EINVAL)
        self.assertEqual(commit_cm.exception.mount_message, _mount_error(sub))
        self.assertIn("not a checkpoint generation", commit_cm.exception.mount_message or "")

    def test_latest_and_generations(self) -> None:
        root = support.new_root("lib-root")
        self.assertIsNone(strata_ckpt.latest(root))
        self.assertEqual(strata_ckpt.generations(root), [])
        gen1, gen2 = os.path.join(root, "step-1"), os.path.join(root, "step-2")
        for gen in (gen1, gen2):
            os.mkdir(gen)
            strata_ckpt.commit(gen, "l2", _write(gen, "model.bin", b"m" * 100))
            self.assertEqual(strata_ckpt.latest(root), gen)
        gens = strata_ckpt.generations(root)
        self.assertEqual([(g.seq, g.name, g.path, g.pinned) for g in gens],
                         [(1, "step-1", gen1, False), (2, "step-2", gen2, False)])
        for g in gens:
            self.assertTrue(strata_ckpt.reached(g.durability, "l2"), g.durability)

    def test_wait_and_pin(self) -> None:
        strata_ckpt.commit(self.gen, "l2", _write(self.gen, "model.bin", b"w" * 1000))
        strata_ckpt.wait(self.gen, "l2")
        strata_ckpt.wait(self.gen)
        self.assertEqual(strata_ckpt.status(self.gen)["durability"], "l3")
        strata_ckpt.pin(self.gen)
        self.assertIs(strata_ckpt.status(self.gen)["pinned"], True)
        strata_ckpt.pin(self.gen, on=False)
        self.assertIs(strata_ckpt.status(self.gen)["pinned"], False)
        with self.assertRaises(ValueError):
            strata_ckpt.wait(self.gen, "l1")

    def test_wait_and_pin_need_a_commit(self) -> None:
        _write(self.gen, "model.bin", b"u" * 10)
        for call in (lambda: strata_ckpt.wait(self.gen), lambda: strata_ckpt.pin(self.gen)):
            with self.assertRaises(strata_ckpt.CheckpointError) as cm:
                call()
            self.assertEqual(cm.exception.errno, errno.EINVAL)
            self.assertEqual(cm.exception.mount_message, _mount_error(self.gen))
            self.assertIn("committed", cm.exception.mount_message or "")
            self.assertIn(cm.exception.mount_message or "?", str(cm.exception))
        self.assertEqual(strata_ckpt.status(self.gen)["state"], "writing")


@support.needs_mount
class CliTest(unittest.TestCase):
    """The ``strata-ckpt`` command as a user runs it: a process, its exit status and what it prints."""

    def setUp(self) -> None:
        self.root = os.path.abspath(support.ckpt_root() or "")
        self.gen = support.new_generation(self.root, "cli")
        local = tempfile.TemporaryDirectory()  # expect files live outside the generation
        self.addCleanup(local.cleanup)
        self.local = local.name

    def run_cli(self, *argv: str, stdin: Optional[str] = None) -> Tuple[int, str, str]:
        env = dict(os.environ, PYTHONPATH=support._SRC + os.pathsep + os.environ.get("PYTHONPATH", ""))
        p = subprocess.run([sys.executable, "-m", "strata_ckpt", *argv], input=stdin, capture_output=True,
                           text=True, env=env, timeout=120)
        return p.returncode, p.stdout, p.stderr

    def expect_file(self, text: str) -> str:
        path = os.path.join(self.local, "expect.tsv")
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        return path

    def test_commit_with_expect_file(self) -> None:
        _write(self.gen, "a.bin", b"a")
        _write(self.gen, "b.bin", b"bb")
        listing = self.expect_file("# written by two ranks\nb.bin\t2\n\na.bin\t1\n")
        self.assertEqual(self.run_cli("commit", self.gen, "--level", "l3", "--expect-file", listing), (0, "", ""))
        st = strata_ckpt.status(self.gen)
        self.assertEqual((st["state"], st["level"], st["durability"], st["files"], st["bytes"]),
                         ("committed", "l3", "l3", 2, 3))

    def test_refused_commit_exits_1(self) -> None:
        _write(self.gen, "a.bin", b"aaaa")
        code, out, err = self.run_cli("commit", self.gen, "--expect-file", "-", stdin="a.bin\t4\nc.bin\t9\n")
        self.assertEqual((code, out), (1, ""))
        self.assertTrue(err.startswith("strata-ckpt: [ENOENT] "), err)
        self.assertIn(_mount_error(self.gen), err)
        self.assertIn("missing: c.bin", err)
        self.assertEqual(strata_ckpt.status(self.gen)["state"], "writing")

        code, _, err = self.run_cli("commit", self.gen, "--expect-file", self.expect_file("a.bin\t5\n"))
        self.assertEqual(code, 1)
        self.assertIn("[EINVAL]", err)
        self.assertIn("a.bin is 4 bytes, expected 5", err)

        self.assertEqual(self.run_cli("commit", self.gen, "--expect-file", self.expect_file("a.bin\t4\n"))[0], 0)
        code, _, err = self.run_cli("commit", self.gen, "--expect-file", self.expect_file("a.bin\t3\n"))
        self.assertEqual(code, 1)
        self.assertIn("[EROFS]", err)
        self.assertEqual(strata_ckpt.status(self.gen)["bytes"], 4)

    def test_status_text_and_json(self) -> None:
        _write(self.gen, "model.bin", b"s" * 321)
        self.assertEqual(self.run_cli("commit", self.gen)[0], 0)
        code, out, err = self.run_cli("status", self.gen)
        self.assertEqual((code, err), (0, ""))
        mount_text = os.getxattr(self.gen, "user.strata.ckpt.status").decode()
        self.assertEqual([line.split("=")[0] for line in out.splitlines()],
                         [line.split("=")[0] for line in mount_text.splitlines()])
        self.assertIn("state=committed", out.splitlines())
        self.assertIn("files=1", out.splitlines())
        self.assertIn("bytes=321", out.splitlines())

        code, out, err = self.run_cli("status", self.gen, "--json")
        self.assertEqual((code, err), (0, ""))
        st = json.loads(out)
        self.assertEqual((st["generation"], st["state"], st["level"], st["files"], st["bytes"], st["pinned"]),
                         (os.path.basename(self.gen), "committed", "l2", 1, 321, False))
        self.assertGreater(st["seq"], 0)
        self.assertTrue(st["committed"].endswith("Z"), st["committed"])
        self.assertEqual(datetime.fromisoformat(st["committed"].replace("Z", "+00:00")),
                         strata_ckpt.status(self.gen)["committed"])

    def test_latest(self) -> None:
        root = support.new_root("cli-root")
        code, out, err = self.run_cli("latest", root)
        self.assertEqual((code, out), (1, ""))
        self.assertIn("no committed generation", err)
        gen = os.path.join(root, "step-1")
        os.mkdir(gen)
        _write(gen, "model.bin", b"l" * 10)
        self.assertEqual(self.run_cli("commit", gen)[0], 0)
        self.assertEqual(self.run_cli("latest", root), (0, gen + "\n", ""))

    def test_list_wait_pin(self) -> None:
        root = support.new_root("cli-root")
        self.assertEqual(self.run_cli("list", root), (0, "SEQ  NAME  DURABILITY  PINNED\n", ""))
        gens = [os.path.join(root, name) for name in ("step-1", "step-2")]
        for gen in gens:
            os.mkdir(gen)
            _write(gen, "model.bin", b"g" * 1000)
            self.assertEqual(self.run_cli("commit", gen)[0], 0)
        self.assertEqual(self.run_cli("wait", gens[0]), (0, "", ""))
        self.assertEqual(self.run_cli("wait", gens[1], "--level", "l3"), (0, "", ""))
        self.assertEqual(self.run_cli("pin", gens[1]), (0, "", ""))
        self.assertIs(strata_ckpt.status(gens[1])["pinned"], True)

        code, out, _ = self.run_cli("list", root)
        self.assertEqual(code, 0)
        self.assertEqual(out.splitlines(), ["SEQ  NAME    DURABILITY  PINNED",
                                            "1    step-1  l3          no",
                                            "2    step-2  l3          yes"])
        code, out, _ = self.run_cli("list", root, "--json")
        self.assertEqual(code, 0)
        self.assertEqual(json.loads(out), [
            {"seq": 1, "name": "step-1", "path": gens[0], "durability": "l3", "pinned": False},
            {"seq": 2, "name": "step-2", "path": gens[1], "durability": "l3", "pinned": True}])
        self.assertEqual(json.loads(out), [dataclasses.asdict(g) for g in strata_ckpt.generations(root)])

        self.assertEqual(self.run_cli("pin", gens[1], "--off"), (0, "", ""))
        self.assertIs(strata_ckpt.status(gens[1])["pinned"], False)
        self.assertEqual(self.run_cli("list", root)[1].splitlines()[2], "2    step-2  l3          no")

    def test_wait_on_uncommitted_exits_1(self) -> None:
        _write(self.gen, "model.bin", b"x")
        code, out, err = self.run_cli("wait", self.gen, "--level", "l2")
        self.assertEqual((code, out), (1, ""))
        self.assertIn("[EINVAL]", err)
        self.assertIn("not committed", err)


if __name__ == "__main__":
    unittest.main()
