"""Shared test helpers: import the package from this checkout, and the skip rules.

Imported first by every test module so ``python3 -m unittest discover -s tests``
and pytest both test the source tree next to them without installing it.
"""

from __future__ import annotations

import os
import sys
import unittest
import uuid
from typing import Optional

_SRC = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src")
if os.path.isdir(_SRC) and _SRC not in sys.path:
    sys.path.insert(0, _SRC)

MOUNT_SKIP = "STRATA_CKPT_ROOT not set (run through the Java IT)"
TORCH_SKIP = "torch is not importable"


def ckpt_root() -> Optional[str]:
    """The checkpoint root the caller prepared on a Strata mount, or None."""
    root = os.environ.get("STRATA_CKPT_ROOT")
    return root or None


def needs_mount(cls: type) -> type:
    """Skip a test class unless STRATA_CKPT_ROOT names a checkpoint root on a mount."""
    return unittest.skipUnless(ckpt_root(), MOUNT_SKIP)(cls)


def unique_name(prefix: str) -> str:
    """A name no other test or earlier run on the same root has used."""
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


def new_generation(root: str, prefix: str) -> str:
    """Make a fresh generation directory (a new direct subdirectory) under ``root`` and return its path."""
    gen = os.path.join(root, unique_name(prefix))
    os.mkdir(gen)
    return gen


def new_root(prefix: str) -> str:
    """Make a fresh, empty checkpoint root inside STRATA_CKPT_ROOT and return its path.

    For tests that need a root with nothing committed in it (``latest`` answering
    none, an exact ``list``). The mount makes every directory that sets
    ``profile=checkpoint`` a root, also one inside another root; to the outer
    root it is just a generation that is never committed (collected after
    ``checkpoint.grace``, an hour by default).
    """
    root = new_generation(os.path.abspath(ckpt_root() or ""), prefix)
    os.setxattr(root, "user.strata.policy", b"profile=checkpoint")
    return root


def torch_importable() -> bool:
    try:
        import torch  # noqa: F401
        import torch.distributed  # noqa: F401
    except Exception:
        return False
    return True
