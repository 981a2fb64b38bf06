"""Small DataFrame helpers shared by the analysis modules (not public API)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Literal

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

Stat = Literal["min", "median", "mean"]

BLOCK = 16  # AES block size in bytes

CASE_COLS: tuple[str, ...] = ("backend", "variant", "op", "shape", "aligned", "bytes", "blocks")


def value_column(df: pd.DataFrame, value_col: str, stat: Stat) -> str:
    """Column to aggregate: per-sample ``value_col`` or else summarised ``f"{stat}_{value_col}"``.

    Summarised frames (``min_ns``, ``median_ns``, ...) are accepted so that tables can be built
    from either form; a median of per-run medians is then only an approximation.
    """
    if value_col in df.columns:
        return value_col
    summarised = f"{stat}_{value_col}"
    if summarised in df.columns:
        return summarised
    raise KeyError(
        f"neither {value_col!r} nor {summarised!r} in columns {sorted(map(str, df.columns))}"
    )


def reduce_points(
    df: pd.DataFrame, keys: Sequence[str], value_col: str = "ns", stat: Stat = "min"
) -> pd.DataFrame:
    """One row per ``keys`` with ``value_col`` reduced by ``stat`` and a sample count
    ``n_samples`` (not ``n``: the tables use ``n`` for the text size, as the threads do)."""
    src = value_column(df, value_col, stat)
    keys = list(keys)
    if not keys:
        vals = df[src].dropna()
        return pd.DataFrame({value_col: [vals.agg(stat)], "n_samples": [len(vals)]})
    g = df.groupby(keys, dropna=False, observed=True, sort=True)[src]
    out = g.agg([stat, "count"]).rename(columns={stat: value_col, "count": "n_samples"})
    return out.reset_index()


def varying(df: pd.DataFrame, candidates: Iterable[str], within: str | None = None) -> list[str]:
    """Candidate columns whose value varies (within some group of ``within`` if given)."""
    out: list[str] = []
    for c in candidates:
        if c not in df.columns or c == within:
            continue
        if within is None or within not in df.columns:
            n = df[c].nunique(dropna=False)
        else:
            n = int(df.groupby(within, observed=True)[c].nunique(dropna=False).max())
        if n > 1:
            out.append(c)
    return out


def has_partial(nbytes: ArrayLike) -> NDArray[np.float64]:
    """1.0 where a length leaves a partial AES block (``bytes % 16 != 0``), else 0.0."""
    return (np.asarray(nbytes, dtype=np.int64) % BLOCK != 0).astype(np.float64)
