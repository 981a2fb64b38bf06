"""Predicted against measured on the host: the driver's seal in place at 8 and 16 KiB.

The measured steady-state rate is the slope between the two sizes (what 8 KiB more costs),
so the fixed costs of a call (length block, tag, entry) drop out as they do from llvm-mca's
loop figure; the 16 KiB rate itself is shown too.  TSC ticks become core cycles with the core
clock the driver measures beside each chunk (a chain of dependent adds).
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from ..backends import Variant, get
from . import model, predictor

SIZES = (8192, 16384)


def measure(backend: str, variant: Variant, k: int = 11, passes: int = 3,
            target_us: float = 10.0) -> dict[str, float]:
    """Core cycles per byte of the seal in place: at 16 KiB and the 8 -> 16 KiB slope."""
    from .. import bench

    res = bench.run("sizes", backends=[backend], sizes=list(SIZES), variant=variant,
                    peers=False, save=False, k=k, passes=passes, target_us=target_us,
                    progress=False)
    if res.errors or res.df.empty:
        raise RuntimeError(f"{backend}: measurement failed: {res.errors or res.skipped}")
    df = res.df[res.df["op"] == "seal"].set_index("bytes")
    ghz = float(df["core_ghz"].median())
    tsc = float(df["tsc_hz"].median()) / 1e9
    t16 = float(df.loc[SIZES[1], "min_ticks"])
    t8 = float(df.loc[SIZES[0], "min_ticks"])
    return {"core_ghz": ghz, "tsc_ghz": tsc, "ns_16k": float(df.loc[SIZES[1], "min_ns"]),
            "ticks_per_byte_16k": t16 / SIZES[1],
            "cycles_per_byte_16k": model.cycles_per_byte(t16 / SIZES[1], ghz, tsc),
            "cycles_per_byte_slope": model.cycles_per_byte((t16 - t8) / (SIZES[1] - SIZES[0]),
                                                           ghz, tsc),
            "spread": float(df["spread"].max())}


def compare(cpu: str, cases: Sequence[tuple[str, str, Variant]], k: int = 11,
            passes: int = 3, progress=None) -> pd.DataFrame:
    """One row per (backend, label, variant): llvm-mca's stitched-loop cycles/byte for
    ``cpu`` (the host's LLVM name) against the measured ones, with their ratio."""
    out = []
    for be, label, v in cases:
        if progress:
            progress(be, label)
        (r,) = predictor.predict(cpu, be, v, ("stitch",))
        m = measure(be, v, k, passes)
        p = r.prediction
        out.append({"backend": be, "variant": label, "tag": r.variant.tag(),
                    "predicted_cycles_per_byte": p.cycles_per_byte,
                    "measured_cycles_per_byte": m["cycles_per_byte_slope"],
                    "measured_cycles_per_byte_16k": m["cycles_per_byte_16k"],
                    "ratio": m["cycles_per_byte_slope"] / p.cycles_per_byte,
                    "ratio_16k": m["cycles_per_byte_16k"] / p.cycles_per_byte,
                    "bottleneck": p.bottleneck, "core_ghz": m["core_ghz"],
                    "tsc_ghz": m["tsc_ghz"], "ns_16k": m["ns_16k"], "spread": m["spread"]})
    return pd.DataFrame(out)


def host_cases(backends: Sequence[str], sweep: bool = True) -> list[tuple[str, str, Variant]]:
    out = []
    for name in backends:
        be = get(name)
        vs = predictor.sweep_variants(be) if sweep else [("default", Variant())]
        out += [(name, label, v) for label, v in vs]
    return out


def worst(df: pd.DataFrame, col: str = "ratio") -> pd.Series:
    """The row whose ratio is furthest from 1 (either way)."""
    import numpy as np

    return df.loc[(np.log(df[col].astype(float))).abs().idxmax()]


__all__ = ["SIZES", "compare", "host_cases", "measure", "worst"]
