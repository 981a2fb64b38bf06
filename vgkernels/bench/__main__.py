"""``python -m vgkernels.bench SWEEP ...`` (the same as ``vgkernels bench``)."""

from __future__ import annotations

import sys

from .cli import main

sys.exit(main())
