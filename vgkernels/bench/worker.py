"""Worker process entry: ``python -m vgkernels.bench.worker`` (see vgkernels.bench.runner)."""

from __future__ import annotations

import sys

from .runner import worker_main

if __name__ == "__main__":
    sys.exit(worker_main())
