"""Report building blocks: what the notebooks in notebooks/ call (profiles, sweeps with
progress, computed tables, plots and conclusions) and the batch that runs them
(``vgkernels report``, see :mod:`vgkernels.report.batch`)."""

from __future__ import annotations

from .session import (
    PROFILES,
    Notebook,
    Paths,
    Profile,
    choose_backends,
    default_out_dir,
    get_profile,
    read_notes,
    start,
)

__all__ = [
    "PROFILES",
    "Notebook",
    "Paths",
    "Profile",
    "choose_backends",
    "default_out_dir",
    "get_profile",
    "read_notes",
    "start",
]
