"""Tests that need no mount and no torch: parsing, the commit value, errors, the CLI.

Where the mount would answer, a small fake stands in for its extended
attributes, following the interface the mount documents.
"""

from __future__ import annotations

import errno
import io
import os
import sys
import tempfile
import unittest
from collections import namedtuple
from contextlib import redirect_stderr
from datetime import datetime, timezone
from typing import Dict, List, Set, Tuple
from unittest import mock

import support  # noqa: F401  (puts ../src on sys.path)

import strata_ckpt
from strata_ckpt import cli, core

STATUS_TEXT = """generation=gen-7
root=/ckpt/run1
state=committed
durability=draining
level=l2
seq=7
files=5
bytes=123456789
unchecked=0
pinned=yes
started=2024-05-01T12:00:00Z
committed=2024-05-01T12:00:03.123456789Z
l2=2024-05-01T12:00:03.5Z
draining=2024-05-01T12:00:04Z
l3=-
future-key=something new
"""


class FakeMount:
    """Stands in for the mount's virtual attributes on a set of directories."""

    def __init__(self, strata_dirs: Set[str]) -> None:
        self.strata = set(strata_dirs)
        self.attrs: Dict[Tuple[str, str], bytes] = {}
        self.set_errors: Dict[Tuple[str, str], int] = {}
        self.get_errors: Dict[Tuple[str, str], int] = {}
        self.set_calls: List[Tuple[str, str, bytes]] = []

    def getxattr(self, path: str, name: str) -> bytes:
        err = self.get_errors.get((path, name))
        if err:
            raise OSError(err, os.strerror(err))
        if (path, name) in self.attrs:
            return self.attrs[(path, name)]
        if name == core.XATTR_POLICY and path in self.strata:
            return b"profile=checkpoint\n"
        raise OSError(errno.ENODATA, os.strerror(errno.ENODATA))

    def setxattr(self, path: str, name: str, value: bytes) -> None:
        if path not in self.strata:
            raise AssertionError(f"setxattr reached a path that is not on the fake mount: {path}")
        self.set_calls.append((path, name, value))
        err = self.set_errors.get((path, name))
        if err:
            raise OSError(err, os.strerror(err))

    def patch(self) -> "mock._patch":
        return mock.patch.multiple(core, _getxattr=self.getxattr, _setxattr=self.setxattr)


class ParseStatusTest(unittest.TestCase):
    def test_types(self) -> None:
        st = strata_ckpt.parse_status(STATUS_TEXT)
        self.assertEqual(st["generation"], "gen-7")
        self.assertEqual(st["root"], "/ckpt/run1")
        self.assertEqual(st["state"], "committed")
        self.assertEqual(st["durability"], "draining")
        self.assertEqual(st["level"], "l2")
        self.assertEqual((st["seq"], st["files"], st["bytes"], st["unchecked"]), (7, 5, 123456789, 0))
        self.assertIs(st["pinned"], True)
        self.assertEqual(st["started"], datetime(2024, 5, 1, 12, 0, 0, tzinfo=timezone.utc))
        self.assertEqual(st["committed"], datetime(2024, 5, 1, 12, 0, 3, 123456, tzinfo=timezone.utc))
        self.assertEqual(st["l2"], datetime(2024, 5, 1, 12, 0, 3, 500000, tzinfo=timezone.utc))
        self.assertIsNone(st["l3"])
        self.assertEqual(st["future-key"], "something new")

    def test_uncommitted(self) -> None:
        st = strata_ckpt.parse_status("state=writing\ndurability=none\nlevel=-\nseq=0\npinned=no\ncommitted=-\n")
        self.assertEqual(st["state"], "writing")
        self.assertIsNone(st["level"])
        self.assertEqual(st["seq"], 0)
        self.assertIs(st["pinned"], False)
        self.assertIsNone(st["committed"])

    def test_unparseable_values_stay_strings(self) -> None:
        st = strata_ckpt.parse_status("files=many\nl3=yesterday\n\nno equals sign here\n")
        self.assertEqual(st, {"files": "many", "l3": "yesterday"})

    def test_instants(self) -> None:
        parse = core._parse_instant
        self.assertEqual(parse("2024-05-01T12:34Z"), datetime(2024, 5, 1, 12, 34, tzinfo=timezone.utc))
        self.assertEqual(parse("2024-05-01T14:34:56+02:00"), datetime(2024, 5, 1, 12, 34, 56, tzinfo=timezone.utc))
        self.assertEqual(parse("2024-05-01T12:34:56.000001Z").microsecond, 1)
        self.assertIsNone(parse("-"))
        with self.assertRaises(ValueError):
            parse("May 1st")


class ParseListTest(unittest.TestCase):
    def test_lines(self) -> None:
        gens = strata_ckpt.parse_list("1\tgen-1\tl3\tno\n2\tgen-2\tl2\tyes\textra\n\n", "/ckpt")
        self.assertEqual([g.name for g in gens], ["gen-1", "gen-2"])
        self.assertEqual(gens[0], strata_ckpt.Generation(1, "gen-1", "/ckpt/gen-1", "l3", False))
        self.assertEqual((gens[1].seq, gens[1].durability, gens[1].pinned), (2, "l2", True))

    def test_empty(self) -> None:
        self.assertEqual(strata_ckpt.parse_list(""), [])

    def test_short_line(self) -> None:
        with self.assertRaises(ValueError):
            strata_ckpt.parse_list("1\tgen-1\n")


class CommitValueTest(unittest.TestCase):
    def test_level_only(self) -> None:
        self.assertEqual(strata_ckpt.commit_value("l2"), b"l2")
        self.assertEqual(strata_ckpt.commit_value("l3", {}), b"l3")

    def test_files_sorted_one_per_line(self) -> None:
        value = strata_ckpt.commit_value("l2", {"b/x.bin": 10, "./a.bin": 0, ".metadata": 7})
        self.assertEqual(value, b"l2\n.metadata\t7\na.bin\t0\nb/x.bin\t10")

    def test_pairs_and_utf8(self) -> None:
        value = strata_ckpt.commit_value("l3", [("r\u00e9sum\u00e9.bin", 3), ("r\u00e9sum\u00e9.bin", 3)])
        self.assertEqual(value, "l3\nr\u00e9sum\u00e9.bin\t3".encode("utf-8"))

    def test_rejects(self) -> None:
        bad = [
            ("l1", None),
            ("L2", None),
            ("l2", {"/abs.bin": 1}),
            ("l2", {"../up.bin": 1}),
            ("l2", {"a//b": 1}),
            ("l2", {"tab\there": 1}),
            ("l2", {"new\nline": 1}),
            ("l2", {"": 1}),
            ("l2", {" lead.bin": 1}),
            ("l2", {"trail.bin ": 1}),
            ("l2", {"a.bin": -1}),
            ("l2", {"a.bin": 1.5}),
            ("l2", {"a.bin": True}),
            ("l2", [("a.bin", 1), ("a.bin", 2)]),
            ("l2", [("only-a-path",)]),
        ]
        for level, expected in bad:
            with self.subTest(level=level, expected=expected):
                with self.assertRaises(ValueError):
                    strata_ckpt.commit_value(level, expected)


StorageInfo = namedtuple("StorageInfo", "relative_path offset length")
WriteResult = namedtuple("WriteResult", "index size_in_bytes storage_data")


class ExpectedSizesTest(unittest.TestCase):
    def test_furthest_end_per_file(self) -> None:
        extents = [("__0_0.distcp", 100, 50), ("__0_0.distcp", 0, 100), ("__1_0.distcp", 0, 70),
                   ("__1_0.distcp", 70, 0)]
        self.assertEqual(strata_ckpt.expected_sizes(extents), {"__0_0.distcp": 150, "__1_0.distcp": 70})

    def test_empty_item_alone_makes_empty_file(self) -> None:
        self.assertEqual(strata_ckpt.expected_sizes([("e.distcp", 0, 0)]), {"e.distcp": 0})

    def test_negative(self) -> None:
        with self.assertRaises(ValueError):
            strata_ckpt.expected_sizes([("a", -1, 5)])

    def test_from_write_results(self) -> None:
        results = [
            [WriteResult("w0", 100, StorageInfo("__0_0.distcp", 0, 100)),
             WriteResult("w1", 28, StorageInfo("__0_0.distcp", 100, 28))],
            [WriteResult("w2", 64, StorageInfo("__1_0.distcp", 0, 64)),
             WriteResult("other", 1, None)],
            [],
        ]
        extents = strata_ckpt.write_result_extents(results)
        self.assertEqual(extents, [("__0_0.distcp", 0, 100), ("__0_0.distcp", 100, 28), ("__1_0.distcp", 0, 64)])
        self.assertEqual(strata_ckpt.expected_sizes(extents), {"__0_0.distcp": 128, "__1_0.distcp": 64})


class ReachedTest(unittest.TestCase):
    def test_order(self) -> None:
        self.assertFalse(strata_ckpt.reached("none", "l2"))
        self.assertTrue(strata_ckpt.reached("l2", "l2"))
        self.assertTrue(strata_ckpt.reached("draining", "l2"))
        self.assertFalse(strata_ckpt.reached("draining", "l3"))
        self.assertTrue(strata_ckpt.reached("l3", "l3"))
        self.assertFalse(strata_ckpt.reached("unknown", "l2"))


class FakeMountTest(unittest.TestCase):
    """The library's side of the interface: which attribute, which value, which error."""

    def setUp(self) -> None:
        self.tmp = tempfile.TemporaryDirectory()
        self.root = self.tmp.name
        self.gen = os.path.join(self.root, "gen-1")
        os.mkdir(self.gen)
        self.mount = FakeMount({self.root, self.gen})
        patcher = self.mount.patch()
        patcher.start()
        self.addCleanup(patcher.stop)
        self.addCleanup(self.tmp.cleanup)

    def test_commit_sets_value(self) -> None:
        strata_ckpt.commit(self.gen, "l3", {"a.bin": 5})
        self.assertEqual(self.mount.set_calls, [(self.gen, core.XATTR_COMMIT, b"l3\na.bin\t5")])

    def test_commit_error_carries_errno_and_mount_message(self) -> None:
        self.mount.set_errors[(self.gen, core.XATTR_COMMIT)] = errno.ENOENT
        self.mount.attrs[(self.gen, core.XATTR_ERROR)] = b"expected file rank-3.bin does not exist\n"
        with open(os.path.join(self.gen, "rank-0.bin"), "wb") as f:
            f.write(b"12345")
        with self.assertRaises(strata_ckpt.CommitError) as cm:
            strata_ckpt.commit(self.gen, "l2", {"rank-0.bin": 5, "rank-3.bin": 5})
        e = cm.exception
        self.assertIsInstance(e, OSError)
        self.assertEqual(e.errno, errno.ENOENT)
        self.assertEqual(e.mount_message, "expected file rank-3.bin does not exist")
        self.assertIn("expected file rank-3.bin does not exist", str(e))
        self.assertIn("missing: rank-3.bin", str(e))
        self.assertNotIn("rank-0.bin", str(e))
        self.assertIn("ENOENT", str(e))

    def test_size_mismatch_names_sizes(self) -> None:
        self.mount.set_errors[(self.gen, core.XATTR_COMMIT)] = errno.EINVAL
        with open(os.path.join(self.gen, "a.bin"), "wb") as f:
            f.write(b"123")
        with self.assertRaises(strata_ckpt.CommitError) as cm:
            strata_ckpt.commit(self.gen, "l2", {"a.bin": 4})
        self.assertEqual(cm.exception.errno, errno.EINVAL)
        self.assertIsNone(cm.exception.mount_message)
        self.assertIn("a.bin is 3 bytes, expected 4", str(cm.exception))

    def test_busy(self) -> None:
        self.mount.set_errors[(self.gen, core.XATTR_COMMIT)] = errno.EBUSY
        with self.assertRaises(strata_ckpt.CommitError) as cm:
            strata_ckpt.commit(self.gen)
        self.assertEqual(cm.exception.errno, errno.EBUSY)
        self.assertIn("still open for writing", str(cm.exception))

    def test_too_long_list_is_refused_before_the_mount(self) -> None:
        many = {f"dir/file-{i:06d}.distcp": 123456789 for i in range(3000)}
        with self.assertRaises(strata_ckpt.CommitError) as cm:
            strata_ckpt.commit(self.gen, "l2", many)
        self.assertEqual(cm.exception.errno, errno.E2BIG)
        self.assertEqual(self.mount.set_calls, [])

    def test_status(self) -> None:
        self.mount.attrs[(self.gen, core.XATTR_STATUS)] = STATUS_TEXT.encode()
        st = strata_ckpt.status(self.gen)
        self.assertEqual(st["files"], 5)
        self.assertEqual(strata_ckpt.status_text(self.gen), STATUS_TEXT)

    def test_status_of_a_directory_that_is_not_a_generation(self) -> None:
        with self.assertRaises(strata_ckpt.CheckpointError) as cm:
            strata_ckpt.status(self.root)
        self.assertNotIsInstance(cm.exception, strata_ckpt.NotOnStrataError)
        self.assertIn("not a generation", str(cm.exception))

    def test_refused_reads_say_what_was_expected(self) -> None:
        self.mount.get_errors[(self.root, core.XATTR_STATUS)] = errno.EINVAL
        self.mount.get_errors[(self.gen, core.XATTR_LATEST)] = errno.EINVAL
        with self.assertRaises(strata_ckpt.CheckpointError) as cm:
            strata_ckpt.status(self.root)
        self.assertEqual(cm.exception.errno, errno.EINVAL)
        self.assertIn("is it a generation", str(cm.exception))
        with self.assertRaises(strata_ckpt.CheckpointError) as cm:
            strata_ckpt.latest(self.gen)
        self.assertIn("is it a checkpoint root", str(cm.exception))

    def test_latest(self) -> None:
        self.assertIsNone(strata_ckpt.latest(self.root))
        self.mount.attrs[(self.root, core.XATTR_LATEST)] = b"gen-1\n"
        self.assertEqual(strata_ckpt.latest(self.root), self.gen)

    def test_generations(self) -> None:
        self.assertEqual(strata_ckpt.generations(self.root), [])
        self.mount.attrs[(self.root, core.XATTR_LIST)] = b"3\tgen-1\tl2\tno\n"
        self.assertEqual(strata_ckpt.generations(self.root),
                         [strata_ckpt.Generation(3, "gen-1", self.gen, "l2", False)])

    def test_wait_and_pin(self) -> None:
        strata_ckpt.wait(self.gen)
        strata_ckpt.wait(self.gen, "l2")
        strata_ckpt.pin(self.gen)
        strata_ckpt.pin(self.gen, on=False)
        self.assertEqual([(n, v) for _, n, v in self.mount.set_calls],
                         [(core.XATTR_WAIT, b"l3"), (core.XATTR_WAIT, b"l2"),
                          (core.XATTR_PIN, b"on"), (core.XATTR_PIN, b"off")])
        with self.assertRaises(ValueError):
            strata_ckpt.wait(self.gen, "l1")

    def test_wait_on_uncommitted(self) -> None:
        self.mount.set_errors[(self.gen, core.XATTR_WAIT)] = errno.EINVAL
        with self.assertRaises(strata_ckpt.CheckpointError) as cm:
            strata_ckpt.wait(self.gen)
        self.assertEqual(cm.exception.errno, errno.EINVAL)
        self.assertIn("not committed", str(cm.exception))

    def test_other_directories_are_not_on_strata(self) -> None:
        other = tempfile.mkdtemp()
        self.addCleanup(os.rmdir, other)
        for call in (lambda: strata_ckpt.latest(other), lambda: strata_ckpt.commit(other)):
            with self.assertRaises(strata_ckpt.NotOnStrataError) as cm:
                call()
            self.assertIn("not on a Strata mount", str(cm.exception))


class RealFileSystemTest(unittest.TestCase):
    """On a local directory the real xattr calls must say "not on a Strata mount", never pretend to work."""

    def setUp(self) -> None:
        if not hasattr(os, "getxattr"):
            self.skipTest("no extended attributes on this platform")
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)

    def test_every_call_says_not_on_strata(self) -> None:
        d = self.tmp.name
        calls = {
            "status": lambda: strata_ckpt.status(d),
            "latest": lambda: strata_ckpt.latest(d),
            "generations": lambda: strata_ckpt.generations(d),
            "commit": lambda: strata_ckpt.commit(d, "l2", {"a": 1}),
            "wait": lambda: strata_ckpt.wait(d),
            "pin": lambda: strata_ckpt.pin(d),
        }
        for name, call in calls.items():
            with self.subTest(name):
                with self.assertRaises(strata_ckpt.NotOnStrataError) as cm:
                    call()
                self.assertIn("is not on a Strata mount", str(cm.exception))
        # a file system that keeps user xattrs must not have been handed the commit
        try:
            os.getxattr(d, core.XATTR_COMMIT)
            self.fail("commit value was stored on a local directory")
        except OSError:
            pass


class CliTest(unittest.TestCase):
    def setUp(self) -> None:
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)
        self.root = self.tmp.name
        self.gen = os.path.join(self.root, "gen-1")
        os.mkdir(self.gen)
        self.mount = FakeMount({self.root, self.gen})
        patcher = self.mount.patch()
        patcher.start()
        self.addCleanup(patcher.stop)

    def run_cli(self, *argv: str) -> Tuple[int, str, str]:
        out, err = io.StringIO(), io.StringIO()
        with redirect_stderr(err):
            code = cli.main(list(argv), out=out)
        return code, out.getvalue(), err.getvalue()

    def test_read_expect_file(self) -> None:
        text = "# ranks\n\nrank-0.bin\t10\nwith space.bin\t20\nplain.bin 30\n"
        self.assertEqual(cli.read_expect_file(io.StringIO(text)),
                         [("rank-0.bin", 10), ("with space.bin", 20), ("plain.bin", 30)])
        with self.assertRaises(ValueError):
            cli.read_expect_file(io.StringIO("a.bin\tten\n"))

    def test_commit(self) -> None:
        listing = os.path.join(self.root, "expect.tsv")
        with open(listing, "w") as f:
            f.write("b.bin\t2\na.bin\t1\n")
        self.assertEqual(self.run_cli("commit", self.gen, "--level", "l3", "--expect-file", listing)[0], 0)
        self.assertEqual(self.mount.set_calls[-1], (self.gen, core.XATTR_COMMIT, b"l3\na.bin\t1\nb.bin\t2"))

    def test_commit_failure_exit_1(self) -> None:
        self.mount.set_errors[(self.gen, core.XATTR_COMMIT)] = errno.EROFS
        code, _, err = self.run_cli("commit", self.gen)
        self.assertEqual(code, 1)
        self.assertIn("EROFS", err)

    def test_latest(self) -> None:
        code, out, err = self.run_cli("latest", self.root)
        self.assertEqual((code, out), (1, ""))
        self.assertIn("no committed generation", err)
        self.mount.attrs[(self.root, core.XATTR_LATEST)] = b"gen-1"
        self.assertEqual(self.run_cli("latest", self.root)[:2], (0, self.gen + "\n"))

    def test_status(self) -> None:
        self.mount.attrs[(self.gen, core.XATTR_STATUS)] = STATUS_TEXT.encode()
        code, out, _ = self.run_cli("status", self.gen)
        self.assertEqual((code, out), (0, STATUS_TEXT))
        code, out, _ = self.run_cli("status", self.gen, "--json")
        self.assertEqual(code, 0)
        self.assertIn('"committed": "2024-05-01T12:00:03.123456Z"', out)

    def test_list_wait_pin(self) -> None:
        self.mount.attrs[(self.root, core.XATTR_LIST)] = b"1\tgen-1\tl3\tyes\n12\tgen-12\tl2\tno\n"
        code, out, _ = self.run_cli("list", self.root)
        self.assertEqual(code, 0)
        self.assertEqual(out.splitlines(), ["SEQ  NAME    DURABILITY  PINNED",
                                            "1    gen-1   l3          yes",
                                            "12   gen-12  l2          no"])
        self.assertEqual(self.run_cli("wait", self.gen, "--level", "l2")[0], 0)
        self.assertEqual(self.run_cli("pin", self.gen, "--off")[0], 0)
        self.assertEqual(self.mount.set_calls[-2:], [(self.gen, core.XATTR_WAIT, b"l2"),
                                                     (self.gen, core.XATTR_PIN, b"off")])

    def test_bad_level_is_usage_error(self) -> None:
        with redirect_stderr(io.StringIO()):
            with self.assertRaises(SystemExit) as cm:
                cli.main(["commit", self.gen, "--level", "l1"])
        self.assertEqual(cm.exception.code, 2)


class ImportTest(unittest.TestCase):
    def test_package_does_not_import_torch(self) -> None:
        code = ("import sys; sys.path.insert(0, %r); import strata_ckpt, strata_ckpt.cli; "
                "assert 'torch' not in sys.modules, 'torch was imported'" % support._SRC)
        import subprocess
        subprocess.run([sys.executable, "-c", code], check=True)

    def test_dcp_without_torch_says_so(self) -> None:
        sys.modules.pop("strata_ckpt.dcp", None)
        with mock.patch.dict(sys.modules, {"torch": None}):
            with self.assertRaises(ImportError) as cm:
                import strata_ckpt.dcp  # noqa: F401
        sys.modules.pop("strata_ckpt.dcp", None)
        self.assertIn("needs PyTorch", str(cm.exception))


if __name__ == "__main__":
    unittest.main()
