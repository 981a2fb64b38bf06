"""Native measurement of vgkernels and its peers: a timing driver emitted as LLVM IR, named
sweeps, tidy DataFrames on disk.

    from vgkernels import bench
    res = bench.run("sizes", backends=["vaes_avx512"], sizes=[256, 16384], runs=2)
    res.df, res.samples, res.paths

Command line: ``vgkernels bench SWEEP ...`` (or ``python -m vgkernels.bench``); see
vgkernels.bench.cli.
"""

from __future__ import annotations

from .cases import OPS, SHAPES, CaseSpec, KernelError, Skip
from .driver import Case, Driver, Measurement, driver
from .runner import Chunk, Session, Settings, Worker
from .store import load
from .sweep import SWEEPS, SweepResult, parse_variant, plan, run

__all__ = [
    "OPS",
    "SHAPES",
    "SWEEPS",
    "Case",
    "CaseSpec",
    "Chunk",
    "Driver",
    "Session",
    "Settings",
    "KernelError",
    "Measurement",
    "Skip",
    "SweepResult",
    "Worker",
    "driver",
    "load",
    "parse_variant",
    "plan",
    "run",
]
