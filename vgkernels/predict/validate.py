"""Predicted against measured on the host: the driver's seal in place, ctr32 and ghash at 8
and 16 KiB (the ``roofline`` sweep's ops), against the stitched, ctr and ghash loops.

The measured steady-state rate is the slope between the two sizes (what 8 KiB more costs),
so the fixed costs of a call (length block, tag, entry) drop out as they do from llvm-mca's
loop figure; the 16 KiB rate itself is shown too.  TSC ticks become core cycles with the core
clock the driver measures beside each chunk (a chain of dependent adds).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from .. import bench
from ..backends import get
from ..variant import Variant
from . import model, predictor

SIZES = (8192, 16384)


# region predicted -> the driver's op that times it
OPS = {"stitch": "seal", "ctr": "ctr32", "ghash": "ghash"}


def measure(backend: str, variant: Variant, k: int = 11, passes: int = 3,
            target_us: float = 10.0) -> dict[str, dict[str, float]]:
    """Per op (seal in place, ctr32, ghash): core cycles per byte at 16 KiB and the
    8 -> 16 KiB slope, the core clock and the TSC rate, the samples' spread."""
    res = bench.run("roofline", backends=[backend], sizes=list(SIZES), variant=variant,
                    peers=False, save=False, k=k, passes=passes, target_us=target_us,
                    progress=False)
    if res.errors or res.df.empty:
        raise RuntimeError(f"{backend}: measurement failed: {res.errors or res.skipped}")
    out: dict[str, dict[str, float]] = {}
    for op in OPS.values():
        df = res.df[res.df["op"] == op].set_index("bytes")
        if df.empty:
            continue
        ghz = float(df["core_ghz"].median())
        tsc = float(df["tsc_hz"].median()) / 1e9
        t16 = float(df.loc[SIZES[1], "min_ticks"])
        t8 = float(df.loc[SIZES[0], "min_ticks"])
        out[op] = {
            "core_ghz": ghz, "tsc_ghz": tsc, "ns_16k": float(df.loc[SIZES[1], "min_ns"]),
            "ticks_per_byte_16k": t16 / SIZES[1],
            "cycles_per_byte_16k": model.cycles_per_byte(t16 / SIZES[1], ghz, tsc),
            "cycles_per_byte_slope": model.cycles_per_byte(
                (t16 - t8) / (SIZES[1] - SIZES[0]), ghz, tsc),
            "spread": float(df["spread"].max())}
    return out


def compare(cpu: str, cases: Sequence[tuple[str, str, Variant]], k: int = 11,
            passes: int = 3, regions: Sequence[str] = ("stitch", "ctr", "ghash"),
            progress=None) -> pd.DataFrame:
    """One row per (backend, label, variant, region): llvm-mca's cycles/byte for ``cpu``
    (the host's LLVM name) against the measured ones (the slope), with their ratio."""
    out = []
    for be, label, v in cases:
        if progress:
            progress(be, label)
        preds = predictor.predict(cpu, be, v, regions)
        m = measure(be, v, k, passes)
        for r in preds:
            p = r.prediction
            got = m.get(OPS[p.region])
            if got is None:
                continue
            out.append({
                "backend": be, "variant": label, "region": p.region, "op": OPS[p.region],
                "tag": r.variant.tag(), "predicted_cycles_per_byte": p.cycles_per_byte,
                "measured_cycles_per_byte": got["cycles_per_byte_slope"],
                "measured_cycles_per_byte_16k": got["cycles_per_byte_16k"],
                "ratio": got["cycles_per_byte_slope"] / p.cycles_per_byte,
                "ratio_16k": got["cycles_per_byte_16k"] / p.cycles_per_byte,
                "bottleneck": p.bottleneck, "busiest_users": ", ".join(
                    f"{m_} {s_:.0%}" for m_, s_ in p.busiest_users.items()),
                "core_ghz": got["core_ghz"], "tsc_ghz": got["tsc_ghz"],
                "ns_16k": got["ns_16k"], "spread": got["spread"]})
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
    return df.loc[(np.log(df[col].astype(float))).abs().idxmax()]


__all__ = ["OPS", "SIZES", "compare", "host_cases", "measure", "worst"]
