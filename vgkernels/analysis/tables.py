"""Tables in the PR threads' format (plain pandas; no ``to_markdown``/tabulate).

* :func:`summary`: min/median/count per case;
* :func:`ratio_table`: ``n | copy+ip | gather | gather/copy+ip``;
* :func:`ab_table`: "main -> PR" cells such as ``"251, 247 → 190, 190"`` (best-of-k of each
  run of variant A, then of variant B, runs in run-id order);
* :func:`to_text`: a fixed-width text rendering.

Every function accepts per-sample rows (``value_col``, default ``"ns"``) or summarised rows
(``min_ns``/``median_ns``); with summarised rows the matching summary column is used.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd

from ._frame import CASE_COLS, Stat, reduce_points, varying

__all__ = ["ab_table", "ratio_table", "summary", "to_text"]


def summary(
    df: pd.DataFrame, *, value_col: str = "ns", keys: Sequence[str] | None = None
) -> pd.DataFrame:
    """Per case (default keys: those of backend/variant/op/shape/aligned/bytes/blocks present):
    ``n``, ``min_<value_col>``, ``median_<value_col>``."""
    keys = [c for c in CASE_COLS if c in df.columns] if keys is None else list(keys)
    lo = reduce_points(df, keys, value_col, "min").rename(columns={"n_samples": "n"})
    med = reduce_points(df, keys, value_col, "median").drop(columns="n_samples")
    out = lo.rename(columns={value_col: f"min_{value_col}"})
    med = med.rename(columns={value_col: f"median_{value_col}"})
    out = out.merge(med, on=keys, how="left") if keys else out.join(med)
    return out[[*keys, "n", f"min_{value_col}", f"median_{value_col}"]]


def _auto_by(
    df: pd.DataFrame, by: Sequence[str] | None, candidates: Sequence[str], within: str
) -> list[str]:
    return varying(df, candidates, within) if by is None else list(by)


def ratio_table(
    df: pd.DataFrame,
    *,
    a: str = "copy_ip",
    b: str = "gather",
    labels: tuple[str, str] = ("copy+ip", "gather"),
    size_col: str = "bytes",
    value_col: str = "ns",
    op_col: str = "op",
    stat: Stat = "min",
    by: Sequence[str] | None = None,
) -> pd.DataFrame:
    """Columns ``[*by, "n", la, lb, "lb/la"]`` (labels default copy+ip / gather).

    ``stat`` reduces the samples of each (case, n) cell (best-of-k by default).  ``by``
    defaults to those of backend/variant/shape that vary within an op; pass ``by=()`` to pool.
    Sizes missing for one op give NaN.
    """
    la, lb = labels
    sub = df[df[op_col].isin([a, b])]
    by = _auto_by(sub, by, ("backend", "variant", "shape"), op_col)
    red = reduce_points(sub, [*by, size_col, op_col], value_col, stat)
    wide = red.pivot_table(
        index=[*by, size_col],
        columns=op_col,
        values=value_col,
        aggfunc="min",
        observed=True,
        dropna=False,
    )
    wide = wide.reindex(columns=[a, b]).reset_index()
    wide.columns.name = None
    wide = wide.rename(columns={size_col: "n", a: la, b: lb})
    wide[f"{lb}/{la}"] = wide[lb] / wide[la]
    return wide[[*by, "n", la, lb, f"{lb}/{la}"]].reset_index(drop=True)


def _fmt(vals: Sequence[float], decimals: int | Callable[[float], str]) -> str:
    if not vals:
        return "—"
    if callable(decimals):  # a formatter (e.g. 3 significant figures for a report)
        return ", ".join(decimals(v) for v in vals)
    return ", ".join(f"{v:.{decimals}f}" for v in vals)


def ab_table(
    df: pd.DataFrame,
    a: str,
    b: str,
    *,
    col: str = "variant",
    size_col: str = "bytes",
    value_col: str = "ns",
    run_col: str = "run",
    by: Sequence[str] | None = None,
    decimals: int | Callable[[float], str] = 0,
    arrow: str = "→",
    columns: str | None = None,
) -> pd.DataFrame:
    """A → B comparison from alternating runs: ``"a_run1, a_run2 → b_run1, b_run2"``.

    ``decimals``: decimals of the times in ``cell``, or a function formatting one time.

    Rows of ``df[col] == a`` and ``== b`` (e.g. main and PR variants) are reduced to the
    best-of-k (minimum) per run; per ``[*by, n]`` the long result has ``a_runs``/``b_runs``
    (tuples in run-id order), ``a_best``/``b_best`` (min over runs), ``ratio`` =
    b_best / a_best and the text ``cell``.  ``by`` defaults to those of
    backend/variant/op/shape varying within ``a`` or ``b``.  With ``columns`` (e.g. ``"op"``)
    the cells are pivoted to one column per value of it, indexed by ``[*by - columns, n]``.
    """
    sub = df[df[col].isin([a, b])]
    by = _auto_by(sub, by, ("backend", "variant", "op", "shape"), col)
    if run_col in sub.columns:
        red = reduce_points(sub, [*by, size_col, col, run_col], value_col, "min")
    else:  # no run ids: one "run" per variant
        red = reduce_points(sub, [*by, size_col, col], value_col, "min").assign(**{run_col: 0})
    rows = []
    for key, g in red.groupby([*by, size_col], observed=True, sort=True, dropna=False):
        key = key if isinstance(key, tuple) else (key,)
        ga = g[g[col] == a].sort_values(run_col)[value_col].to_numpy(dtype=float)
        gb = g[g[col] == b].sort_values(run_col)[value_col].to_numpy(dtype=float)
        a_best = float(np.min(ga)) if ga.size else np.nan
        b_best = float(np.min(gb)) if gb.size else np.nan
        rows.append(
            {
                **dict(zip([*by, "n"], key, strict=True)),
                "a_runs": tuple(map(float, ga)),
                "b_runs": tuple(map(float, gb)),
                "a_best": a_best,
                "b_best": b_best,
                "ratio": b_best / a_best,
                "cell": f"{_fmt(tuple(ga), decimals)} {arrow} {_fmt(tuple(gb), decimals)}",
            }
        )
    cols = [*by, "n", "a_runs", "b_runs", "a_best", "b_best", "ratio", "cell"]
    out = pd.DataFrame(rows, columns=cols)
    if columns is None:
        return out
    index = [c for c in by if c != columns] + ["n"]
    wide = out.pivot(index=index, columns=columns, values="cell").reset_index()
    wide.columns.name = None
    return wide


def to_text(df: pd.DataFrame, *, decimals: int = 2, index: bool = False) -> str:
    """Fixed-width text of a table (floats with ``decimals`` places, ints untouched)."""
    return df.to_string(index=index, float_format=lambda v: f"{v:.{decimals}f}")
