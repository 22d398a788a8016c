"""``python -m strata_ckpt`` runs the ``strata-ckpt`` command."""

import sys

from .cli import main

sys.exit(main())
