"""Native measurement of vgkernels and its peers: a timing driver emitted as LLVM IR, named
sweeps, tidy DataFrames on disk.

    from vgkernels import bench
    res = bench.run("sizes", backends=["vaes_avx512"], sizes=[256, 16384], runs=2)
    res.df          # one row per case and run: min/median ns and ticks, spread, metadata
    res.samples     # one row per sample (what vgkernels.analysis consumes)
    res.paths       # Parquet + CSV (+ samples, + meta JSON) under data/<host>/
    bench.run("blocks", ab=("tail=split", "tail=full"))    # A/B/A/B, run ids 0..3

Lower level: ``drv = bench.get_driver()`` (this process's compiled, calibrated, pinned driver),
``case = bench.cases.Builder(drv).build(bench.CaseSpec("seal", 1024, "vaes_avx512"))``,
``drv.measure([case]).results[0].stats(drv.tsc_hz)``.

Command line: ``vgkernels bench SWEEP ...`` (or ``python -m vgkernels.bench``); see
vgkernels.bench.cli.
"""

from __future__ import annotations

from .cases import OPS, SHAPES, CaseSpec, KernelError, Skip
from .driver import Case, Driver, Measurement, Timing
from .driver import driver as get_driver  # (not "driver": that names the module)
from .runner import Chunk, Session, Settings, Worker
from .store import load
from .sweep import SWEEPS, SweepResult, plan, run

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
    "Timing",
    "Worker",
    "get_driver",
    "load",
    "plan",
    "run",
]
