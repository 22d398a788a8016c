"""The ``strata-ckpt`` command: the same operations as the library, for shell scripts and launchers."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from datetime import datetime
from typing import Any, List, Optional, Sequence, TextIO, Tuple

from . import core

_EXPECT_HELP = ("file listing the files the generation must hold, one '<relative path><TAB><size in bytes>' "
                "per line ('-' reads standard input; blank lines and lines starting with '#' are skipped)")


def read_expect_file(stream: TextIO, name: str = "<expect-file>") -> List[Tuple[str, int]]:
    """Parse an expect file: ``path<TAB>size`` per line, or ``path size`` when the path has no tab."""
    pairs = []
    for number, raw in enumerate(stream, 1):
        line = raw.rstrip("\r\n")
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        path, sep, size = line.rpartition("\t")
        if not sep:
            cols = line.rsplit(None, 1)
            if len(cols) != 2:
                raise ValueError(f"{name}:{number}: expected '<path><TAB><size>', got {line!r}")
            path, size = cols
        try:
            pairs.append((path, int(size)))
        except ValueError:
            raise ValueError(f"{name}:{number}: size is not an integer: {size!r}") from None
    return pairs


def _json_default(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat().replace("+00:00", "Z")
    raise TypeError(f"not JSON serializable: {value!r}")


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="strata-ckpt",
        description="Commit and inspect checkpoint generations on a Strata mount.")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    c = sub.add_parser("commit", help="commit a generation once every writer has closed its files")
    c.add_argument("gen", metavar="GEN", help="generation directory (a direct subdirectory of a checkpoint root)")
    c.add_argument("--level", choices=core.LEVELS, default="l2", help="durability to reach before returning "
                   "(default l2)")
    c.add_argument("--expect-file", metavar="FILE", help=_EXPECT_HELP)

    s = sub.add_parser("status", help="print a generation's state, durability, counts and timestamps")
    s.add_argument("gen", metavar="GEN")
    s.add_argument("--json", action="store_true", help="print parsed JSON instead of the mount's key=value lines")

    la = sub.add_parser("latest", help="print the path of the newest committed generation (exit 1 if none)")
    la.add_argument("root", metavar="ROOT")

    w = sub.add_parser("wait", help="block until a committed generation reaches a level")
    w.add_argument("gen", metavar="GEN")
    w.add_argument("--level", choices=core.LEVELS, default="l3", help="level to wait for (default l3)")

    li = sub.add_parser("list", help="list committed generations, oldest first")
    li.add_argument("root", metavar="ROOT")
    li.add_argument("--json", action="store_true", help="print JSON")

    pn = sub.add_parser("pin", help="pin a generation so retention never removes it")
    pn.add_argument("gen", metavar="GEN")
    pn.add_argument("--off", action="store_true", help="unpin instead")
    return p


def _run(args: argparse.Namespace, out: TextIO) -> int:
    if args.command == "commit":
        expected = None
        if args.expect_file == "-":
            expected = read_expect_file(sys.stdin, "<stdin>")
        elif args.expect_file:
            with open(args.expect_file, encoding="utf-8") as f:
                expected = read_expect_file(f, args.expect_file)
        core.commit(args.gen, args.level, expected)
        return 0
    if args.command == "status":
        if args.json:
            json.dump(core.status(args.gen), out, indent=2, default=_json_default)
            out.write("\n")
        else:
            text = core.status_text(args.gen)
            out.write(text if text.endswith("\n") else text + "\n")
        return 0
    if args.command == "latest":
        path = core.latest(args.root)
        if path is None:
            print(f"strata-ckpt: no committed generation under {args.root}", file=sys.stderr)
            return 1
        print(path, file=out)
        return 0
    if args.command == "wait":
        core.wait(args.gen, args.level)
        return 0
    if args.command == "list":
        gens = core.generations(args.root)
        if args.json:
            json.dump([dataclasses.asdict(g) for g in gens], out, indent=2)
            out.write("\n")
        else:
            rows = [("SEQ", "NAME", "DURABILITY", "PINNED")]
            rows += [(str(g.seq), g.name, g.durability, "yes" if g.pinned else "no") for g in gens]
            widths = [max(len(r[i]) for r in rows) for i in range(3)]
            for r in rows:
                print("  ".join(col.ljust(widths[i]) for i, col in enumerate(r[:3])) + "  " + r[3], file=out)
        return 0
    if args.command == "pin":
        core.pin(args.gen, not args.off)
        return 0
    raise AssertionError(args.command)


def main(argv: Optional[Sequence[str]] = None, out: Optional[TextIO] = None) -> int:
    """Entry point; returns the exit status (0 ok, 1 failed or nothing committed, 2 bad usage)."""
    args = _parser().parse_args(argv)
    try:
        return _run(args, out or sys.stdout)
    except (OSError, ValueError) as e:
        print(f"strata-ckpt: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
