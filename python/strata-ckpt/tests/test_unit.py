"""Tests that need no mount and no torch: parsing, the commit value, the command line's own checks.

Nothing here stands in for the mount: what the library and the command line do
on a real one is in test_mount.py, and on a local directory the real calls must
say it is not a Strata mount (``RealFileSystemTest``).
"""

from __future__ import annotations

import io
import os
import sys
import tempfile
import unittest
from contextlib import redirect_stderr
from datetime import datetime, timezone
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

class ReachedTest(unittest.TestCase):
    def test_order(self) -> None:
        self.assertFalse(strata_ckpt.reached("none", "l2"))
        self.assertTrue(strata_ckpt.reached("l2", "l2"))
        self.assertTrue(strata_ckpt.reached("draining", "l2"))
        self.assertFalse(strata_ckpt.reached("draining", "l3"))
        self.assertTrue(strata_ckpt.reached("l3", "l3"))
        self.assertFalse(strata_ckpt.reached("unknown", "l2"))


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


class CliParsingTest(unittest.TestCase):
    """What the command line checks before it asks the mount anything."""

    def test_read_expect_file(self) -> None:
        text = "# ranks\n\nrank-0.bin\t10\nwith space.bin\t20\nplain.bin 30\n"
        self.assertEqual(cli.read_expect_file(io.StringIO(text)),
                         [("rank-0.bin", 10), ("with space.bin", 20), ("plain.bin", 30)])
        with self.assertRaises(ValueError):
            cli.read_expect_file(io.StringIO("a.bin\tten\n"))

    def test_bad_level_is_usage_error(self) -> None:
        with redirect_stderr(io.StringIO()) as err:
            with self.assertRaises(SystemExit) as cm:
                cli.main(["commit", "some/gen", "--level", "l1"])
        self.assertEqual(cm.exception.code, 2)
        self.assertIn("invalid choice: 'l1'", err.getvalue())


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
