"""Shared test helpers: import the package from this checkout, and the skip rules.

Imported first by every test module so ``python3 -m unittest discover -s tests``
and pytest both test the source tree next to them without installing it.
"""

from __future__ import annotations

import os
import sys
import unittest
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


def torch_importable() -> bool:
    try:
        import torch  # noqa: F401
        import torch.distributed  # noqa: F401
    except Exception:
        return False
    return True
