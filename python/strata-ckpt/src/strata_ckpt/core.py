"""Commit, inspect and wait on checkpoint generations through a Strata mount.

Everything here talks to the mount through extended attributes that the mount
answers itself (they are read and set by name and never listed). The functions
only translate between those attributes and Python values; the mount decides
what a commit means, so the rules live in one place.
"""

from __future__ import annotations

import errno
import os
import re
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Tuple, Union

PathLike = Union[str, "os.PathLike[str]"]
Expected = Union[Mapping[str, int], Iterable[Tuple[str, int]]]

XATTR_COMMIT = "user.strata.ckpt.commit"
XATTR_STATUS = "user.strata.ckpt.status"
XATTR_WAIT = "user.strata.ckpt.wait"
XATTR_LATEST = "user.strata.ckpt.latest"
XATTR_LIST = "user.strata.ckpt.list"
XATTR_PIN = "user.strata.ckpt.pin"
XATTR_ERROR = "user.strata.ckpt.error"
XATTR_POLICY = "user.strata.policy"

LEVELS = ("l2", "l3")
"""Levels a commit or a wait can ask for."""

DURABILITY_ORDER = ("none", "l2", "draining", "l3")
"""Durability states from weakest to strongest: ``draining`` still holds the L2 copies."""

XATTR_VALUE_MAX = 65536
"""Linux refuses extended attribute values larger than this (E2BIG), whatever the file system."""

_GEN_HINT = "is it a generation (a direct subdirectory of a directory with profile=checkpoint)?"
_ROOT_HINT = "is it a checkpoint root (a directory with profile=checkpoint)?"
_INT_KEYS = ("seq", "files", "bytes", "unchecked")
_TIME_KEYS = ("started", "committed", "l2", "draining", "l3")
_NOT_STRATA_ERRNOS = frozenset(
    e for e in (getattr(errno, "ENODATA", None), getattr(errno, "ENOTSUP", None),
                getattr(errno, "EOPNOTSUPP", None), getattr(errno, "ENOATTR", None))
    if e is not None)


class CheckpointError(OSError):
    """A checkpoint operation failed; ``errno`` is the mount's answer.

    Subclassing OSError keeps ``except OSError`` and ``e.errno`` working for
    callers that already handle file-system errors. ``mount_message`` is the
    mount's own explanation (from ``user.strata.ckpt.error``) when it gave one.
    """

    def __init__(self, err: int, message: str, path: Optional[PathLike] = None,
                 mount_message: Optional[str] = None) -> None:
        super().__init__(err, message)
        self.path = os.fspath(path) if path is not None else None
        self.mount_message = mount_message

    def __str__(self) -> str:
        name = errno.errorcode.get(self.errno, str(self.errno)) if self.errno is not None else "?"
        return f"[{name}] {self.strerror}"


class CommitError(CheckpointError):
    """A commit was refused: EBUSY, ENOENT, EINVAL or EROFS (see ``commit``)."""


class NotOnStrataError(CheckpointError):
    """The path is not on a Strata mount, so none of the checkpoint attributes exist there."""


@dataclass(frozen=True)
class Generation:
    """One committed generation as listed by the checkpoint root, oldest first."""

    seq: int
    name: str
    path: str
    durability: str
    pinned: bool


# The two calls every attribute goes through.
def _getxattr(path: str, name: str) -> bytes:
    return os.getxattr(path, name)


def _setxattr(path: str, name: str, value: bytes) -> None:
    os.setxattr(path, name, value)


def _require_xattrs() -> None:
    if not hasattr(os, "getxattr"):
        raise NotOnStrataError(errno.ENOTSUP, "strata_ckpt needs Linux extended attributes "
                               "(os.getxattr is not available on this platform)")


def _strerror(err: int) -> str:
    try:
        return os.strerror(err)
    except ValueError:
        return f"error {err}"


def _on_strata(path: str) -> bool:
    """True when ``path`` answers the Strata policy attribute, which every directory on a mount has."""
    try:
        _getxattr(path, XATTR_POLICY)
        return True
    except OSError as e:
        if e.errno in _NOT_STRATA_ERRNOS:
            return False
        raise


def _not_on_strata(path: str, what: str) -> NotOnStrataError:
    return NotOnStrataError(
        errno.ENOTSUP,
        f"{path} is not on a Strata mount ({what} needs the mount's user.strata.ckpt.* attributes)",
        path)


def _mount_error(path: str) -> Optional[str]:
    """The mount's last error message for this generation, or None when it kept none."""
    try:
        text = _getxattr(path, XATTR_ERROR).decode("utf-8", "replace").strip()
    except OSError:
        return None
    return text or None


def _get(path: PathLike, name: str, what: str, hint: str) -> Optional[str]:
    """Read a virtual attribute; None means ENODATA on a directory that is on a Strata mount."""
    _require_xattrs()
    p = os.fspath(path)
    try:
        return _getxattr(p, name).decode("utf-8")
    except OSError as e:
        if e.errno in _NOT_STRATA_ERRNOS:
            if not _on_strata(p):
                raise _not_on_strata(p, what) from None
            return None
        err = e.errno or errno.EIO
        message = f"{what} of {p}: {_strerror(err)}"
        if err == errno.EINVAL:
            message += f"; {hint}"
        raise CheckpointError(err, message, p) from None


def _set(path: PathLike, name: str, value: bytes, what: str,
         error_type: Callable[..., CheckpointError] = CheckpointError,
         explain: Optional[Callable[[str, int], str]] = None) -> None:
    _require_xattrs()
    p = os.fspath(path)
    try:
        # Checked first because a local file system that keeps user xattrs would
        # accept the value silently, and a commit that did nothing must not look
        # like one that worked.
        if not _on_strata(p):
            raise _not_on_strata(p, what)
        _setxattr(p, name, value)
    except NotOnStrataError:
        raise
    except OSError as e:
        if e.errno in _NOT_STRATA_ERRNOS and not _on_strata(p):
            raise _not_on_strata(p, what) from None
        err = e.errno or errno.EIO
        mount = _mount_error(p)
        parts = [f"{what} of {p} failed: {_strerror(err)}"]
        if mount:
            parts.append(mount)
        if explain is not None:
            hint = explain(p, err)
            if hint:
                parts.append(hint)
        raise error_type(err, "; ".join(parts), p, mount) from None


def _check_level(level: str) -> str:
    if level not in LEVELS:
        raise ValueError(f"level must be one of {', '.join(LEVELS)}, not {level!r}")
    return level


def normalize_expected(expected: Optional[Expected]) -> List[Tuple[str, int]]:
    """Validate an expected-file list and return it sorted as ``(relative path, size)`` pairs.

    Checked here rather than by the mount so a bad path (absolute, ``..``, a tab
    or newline in it) is reported before anything is committed, and so the same
    file listed twice with two sizes is caught instead of silently picking one.
    """
    if expected is None:
        return []
    items: Iterable[Tuple[str, int]] = expected.items() if isinstance(expected, Mapping) else expected
    sizes: Dict[str, int] = {}
    for item in items:
        try:
            raw_path, raw_size = item
        except (TypeError, ValueError):
            raise ValueError(f"expected entries are (relative path, size) pairs, not {item!r}") from None
        path = os.fspath(raw_path)
        if os.sep != "/":
            path = path.replace(os.sep, "/")
        while path.startswith("./"):
            path = path[2:]
        parts = path.split("/")
        if not path or path.startswith("/") or any(c in path for c in "\t\n\r\0") \
                or any(part in ("", ".", "..") for part in parts) or path != path.strip():
            raise ValueError(f"expected path must be relative to the generation, '/'-separated, "
                             f"without '.', '..', empty parts, tabs, newlines or leading/trailing "
                             f"whitespace: {raw_path!r}")
        if isinstance(raw_size, bool) or not isinstance(raw_size, int) or raw_size < 0:
            raise ValueError(f"expected size of {path} must be a non-negative int, not {raw_size!r}")
        if path in sizes and sizes[path] != raw_size:
            raise ValueError(f"{path} is expected twice with different sizes ({sizes[path]} and {raw_size})")
        sizes[path] = raw_size
    return sorted(sizes.items())


def commit_value(level: str = "l2", expected: Optional[Expected] = None) -> bytes:
    """The bytes ``commit`` writes to ``user.strata.ckpt.commit``: the level, then ``path<TAB>size`` lines."""
    lines = [_check_level(level)]
    lines.extend(f"{path}\t{size}" for path, size in normalize_expected(expected))
    return "\n".join(lines).encode("utf-8")


def expected_sizes(extents: Iterable[Tuple[str, int, int]]) -> Dict[str, int]:
    """File sizes implied by ``(relative path, offset, length)`` extents: the furthest end per file.

    A writer that records where each item landed (as torch DCP does) knows how
    long every file must be without asking the file system, which is what makes
    the list worth checking: a rank whose bytes were lost shows up as a mismatch.
    """
    sizes: Dict[str, int] = {}
    for path, offset, length in extents:
        if offset < 0 or length < 0:
            raise ValueError(f"negative offset or length for {path}: {offset}, {length}")
        end = offset + length
        if end > sizes.get(path, -1):
            sizes[path] = end
    return sizes


def write_result_extents(results: Iterable[Iterable[Any]]) -> List[Tuple[str, int, int]]:
    """``(relative path, offset, length)`` of every item in torch DCP's per-rank write results.

    Duck-typed so it needs no torch: each result's ``storage_data`` is expected
    to have ``relative_path``, ``offset`` and ``length`` (torch's ``_StorageInfo``);
    results whose storage data has no ``relative_path`` are skipped.
    """
    out = []
    for rank_results in results:
        for wr in rank_results:
            info: Any = getattr(wr, "storage_data", None)
            path = getattr(info, "relative_path", None)
            if path is None:
                continue
            out.append((str(path), int(info.offset), int(info.length)))
    return out


def _explain_commit(expected: List[Tuple[str, int]]) -> Callable[[str, int], str]:
    """Add what the caller can see locally, so the error names the file even if the mount's message does not."""

    def explain(gen: str, err: int) -> str:
        if err == errno.ENOENT and not os.path.isdir(gen):
            return "the generation directory does not exist"
        if err == errno.ENOENT and expected:
            missing = [p for p, _ in expected if not os.path.exists(os.path.join(gen, *p.split("/")))]
            if missing:
                shown = ", ".join(missing[:10]) + (f" and {len(missing) - 10} more" if len(missing) > 10 else "")
                return f"missing: {shown}"
        if err == errno.EINVAL and expected:
            wrong = []
            for p, size in expected:
                try:
                    actual = os.stat(os.path.join(gen, *p.split("/"))).st_size
                except OSError:
                    continue
                if actual != size:
                    wrong.append(f"{p} is {actual} bytes, expected {size}")
            if wrong:
                return "; ".join(wrong[:10]) + (f" and {len(wrong) - 10} more" if len(wrong) > 10 else "")
        if err == errno.EBUSY:
            return "a file in the generation is still open for writing (close every writer before committing)"
        if err == errno.EROFS:
            return "the generation was already committed with a different file list or a higher level"
        if err == errno.EINVAL and not expected:
            return _GEN_HINT
        return ""

    return explain


def commit(gen_dir: PathLike, level: str = "l2", expected: Optional[Expected] = None) -> None:
    """Commit a generation once every rank has closed its files; blocks until ``level`` is reached.

    ``expected`` maps each file's path (relative to ``gen_dir``) to its size in
    bytes, or is an iterable of such pairs. The mount refuses the commit when a
    listed file is missing (ENOENT), has another size (EINVAL), or any file is
    still open for writing (EBUSY, after giving writers about ten seconds to
    close). Committing again with the same list and the same or a lower level
    only waits; a different list or a higher level is EROFS. Until a generation
    is committed, ``latest`` never returns it, so a crash mid-write can never
    be mistaken for a checkpoint.

    Raises CommitError (an OSError) with the errno and the mount's message.
    """
    pairs = normalize_expected(expected)
    value = commit_value(level, pairs)
    p = os.fspath(gen_dir)
    if len(value) > XATTR_VALUE_MAX:
        raise CommitError(errno.E2BIG, f"commit of {p}: the expected-file list is {len(value)} bytes, more than "
                          f"the {XATTR_VALUE_MAX} bytes Linux allows in one extended attribute; "
                          f"commit without it or list fewer files", p)
    _set(p, XATTR_COMMIT, value, "commit", CommitError, _explain_commit(pairs))


def wait(gen_dir: PathLike, level: str = "l3") -> None:
    """Block until a committed generation reaches ``level`` (EINVAL if it is not committed).

    Training usually commits at ``l2`` to get back to work quickly and waits for
    ``l3`` only where it matters (at the end of a job, or before relying on a
    generation surviving the loss of L2 agents); run this in a thread to wait
    in the background.
    """
    _set(gen_dir, XATTR_WAIT, _check_level(level).encode("ascii"), f"wait for {level}",
         explain=lambda p, err: "the generation is not committed yet" if err == errno.EINVAL else "")


def pin(gen_dir: PathLike, on: bool = True) -> None:
    """Pin (or unpin) a generation: retention never removes a pinned one."""
    _set(gen_dir, XATTR_PIN, b"on" if on else b"off", "pin" if on else "unpin")


def _parse_instant(text: str) -> Optional[datetime]:
    """Parse the mount's ISO-8601 UTC instants, which may carry up to nine fractional digits."""
    if text in ("", "-"):
        return None
    m = re.fullmatch(r"(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?"
                     r"(Z|[+-]\d{2}:?\d{2})?", text)
    if m is None:
        raise ValueError(f"not an ISO-8601 instant: {text!r}")
    year, month, day, hour, minute = (int(g) for g in m.groups()[:5])
    second = int(m.group(6) or 0)
    micros = int((m.group(7) or "0").ljust(9, "0")[:6])
    zone = m.group(8)
    tz = timezone.utc
    if zone and zone != "Z":
        sign = -1 if zone[0] == "-" else 1
        digits = zone[1:].replace(":", "")
        tz = timezone(sign * timedelta(hours=int(digits[:2]), minutes=int(digits[2:])))
    return datetime(year, month, day, hour, minute, second, micros, tzinfo=tz).astimezone(timezone.utc)


def parse_status(text: str) -> Dict[str, Any]:
    """Turn the mount's ``key=value`` status lines into a dict with typed values.

    ``seq``, ``files``, ``bytes`` and ``unchecked`` become ints, ``pinned`` a
    bool, ``level`` None when ``-``, and the timestamps (``started``,
    ``committed``, ``l2``, ``draining``, ``l3``) timezone-aware UTC datetimes,
    None when ``-``. Other keys, including ones a newer mount adds, stay
    strings; a value that does not parse is kept as the string it was.
    """
    out: Dict[str, Any] = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or "=" not in line:
            continue
        key, _, value = line.partition("=")
        key, value = key.strip(), value.strip()
        parsed: Any = value
        try:
            if key in _INT_KEYS:
                parsed = int(value)
            elif key == "pinned":
                parsed = {"yes": True, "no": False}.get(value, value)
            elif key == "level":
                parsed = None if value == "-" else value
            elif key in _TIME_KEYS:
                parsed = _parse_instant(value)
        except ValueError:
            parsed = value
        out[key] = parsed
    return out


def reached(durability: str, level: str) -> bool:
    """Whether a ``durability`` value from status is at least ``level`` (``l2``/``l3``).

    ``draining`` counts as l2: the L2 copies are still there while the drain to L3 runs.
    """
    order = {name: i for i, name in enumerate(DURABILITY_ORDER)}
    if durability not in order:
        return False
    return order[durability] >= order[_check_level(level)]


def status_text(gen_dir: PathLike) -> str:
    """The mount's status text for a generation, unparsed (what ``strata-ckpt status`` prints)."""
    text = _get(gen_dir, XATTR_STATUS, "status", _GEN_HINT)
    if text is None:
        p = os.fspath(gen_dir)
        raise CheckpointError(errno.ENODATA, f"{p} is on a Strata mount but is not a generation "
                              "(a direct subdirectory of a directory with profile=checkpoint)", p)
    return text


def status(gen_dir: PathLike) -> Dict[str, Any]:
    """The generation's state, durability, counts and timestamps; see ``parse_status`` for the types."""
    return parse_status(status_text(gen_dir))


def latest(root: PathLike) -> Optional[str]:
    """Full path of the newest committed generation under ``root``, or None when nothing is committed.

    This is what a restarting job should load: a generation that was being
    written when the job died is never returned.
    """
    name = _get(root, XATTR_LATEST, "latest", _ROOT_HINT)
    if name is None:
        return None
    name = name.strip()
    return os.path.join(os.fspath(root), name) if name else None


def parse_list(text: str, root: PathLike = "") -> List[Generation]:
    """Parse ``seq<TAB>name<TAB>durability<TAB>pinned`` lines; extra columns are ignored."""
    gens = []
    r = os.fspath(root)
    for line in text.splitlines():
        if not line.strip():
            continue
        cols = line.split("\t")
        if len(cols) < 4:
            raise ValueError(f"unexpected line in {XATTR_LIST}: {line!r}")
        gens.append(Generation(seq=int(cols[0]), name=cols[1], path=os.path.join(r, cols[1]) if r else cols[1],
                               durability=cols[2], pinned=cols[3].strip() == "yes"))
    return gens


def generations(root: PathLike) -> List[Generation]:
    """The committed generations under ``root``, oldest first (those still being written are not listed)."""
    text = _get(root, XATTR_LIST, "list", _ROOT_HINT)
    return parse_list(text or "", root)
