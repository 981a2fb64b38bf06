"""Linear cost models of time per call against blocks (PR thread "cost models").

* :func:`fit_cost`: ``ns = fixed + per_block * blocks (+ per_partial * has_partial)``;
* :func:`fit_grouped`: ``ns = fixed + per_group_iter * (blocks // group)
  + per_leftover_block * (blocks % group) (+ per_partial * has_partial)``, i.e. piecewise
  linear with a break at every group boundary;
* :func:`excess`: points whose measurement exceeds the model by more than ``rtol``.

``blocks`` is taken from the data as is; ``has_partial`` is ``bytes % 16 != 0``.  Samples are
first reduced to one value per point (``reduce="min"``: best-of-k; ``"median"``; or None to fit
every sample).  ``loss="linear"`` is ordinary least squares; ``"soft_l1"``, ``"huber"`` or
``"cauchy"`` fit robustly with :func:`scipy.optimize.least_squares` (``f_scale`` defaults to
1.4826 * MAD of the OLS residuals) and report IRLS-style approximate standard errors.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pandas as pd
from numpy.typing import NDArray
from scipy.optimize import least_squares

from ._frame import Stat, has_partial, reduce_points

Loss = Literal["linear", "soft_l1", "huber", "cauchy"]

__all__ = ["CostModel", "coef_table", "excess", "fit_by", "fit_cost", "fit_grouped"]


@dataclass(frozen=True, eq=False)
class CostModel:
    """A fitted cost model.

    ``coef``/``stderr``: per term (``fixed``, ``per_block`` | ``per_group_iter`` and
    ``per_leftover_block``, optionally ``per_partial``), in units of ``value_col``.
    ``points``: the fitted points (keys, ``blocks``, ``has_partial``, ``y``, ``fitted``,
    ``resid`` = y - fitted, ``rel_resid`` = resid / fitted).
    """

    terms: tuple[str, ...]
    coef: dict[str, float]
    stderr: dict[str, float]
    r2: float
    rmse: float
    n_points: int
    loss: str
    reduce: str | None
    group: int | None
    value_col: str
    blocks_col: str
    bytes_col: str
    points: pd.DataFrame = field(repr=False)

    def design(self, df: pd.DataFrame) -> NDArray[np.float64]:
        """Design matrix of this model's terms for the rows of ``df``."""
        return _design(df, self.terms, self.group, self.blocks_col, self.bytes_col)

    def predict(self, df: pd.DataFrame) -> NDArray[np.float64]:
        """Model time for each row of ``df`` (needs the blocks and bytes columns)."""
        beta = np.array([self.coef[t] for t in self.terms])
        return self.design(df) @ beta

    @property
    def residuals(self) -> NDArray[np.float64]:
        """Residuals (measured - fitted) per fitted point."""
        return self.points["resid"].to_numpy()

    @property
    def leftover_penalty(self) -> float | None:
        """Grouped model: ns a leftover block costs beyond its share of a group iteration."""
        if self.group is None:
            return None
        return self.coef["per_leftover_block"] - self.coef["per_group_iter"] / self.group

    def table(self) -> pd.DataFrame:
        """Coefficients and standard errors, one row per term."""
        return pd.DataFrame(
            {
                "term": list(self.terms),
                "coef": [self.coef[t] for t in self.terms],
                "stderr": [self.stderr[t] for t in self.terms],
            }
        )


def _design(
    df: pd.DataFrame, terms: Sequence[str], group: int | None, blocks_col: str, bytes_col: str
) -> NDArray[np.float64]:
    blocks = df[blocks_col].to_numpy(dtype=np.int64)
    cols: dict[str, NDArray[np.float64]] = {"fixed": np.ones(len(df))}
    if group is None:
        cols["per_block"] = blocks.astype(float)
    else:
        cols["per_group_iter"] = (blocks // group).astype(float)
        cols["per_leftover_block"] = (blocks % group).astype(float)
    if "per_partial" in terms:
        if "has_partial" in df.columns:
            cols["per_partial"] = df["has_partial"].to_numpy(dtype=float)
        else:
            cols["per_partial"] = has_partial(df[bytes_col])
    return np.column_stack([cols[t] for t in terms])


def _rho_prime(loss: str, z: NDArray[np.float64]) -> NDArray[np.float64]:
    """Derivative of scipy's loss rho(z), z = (r / f_scale)**2: the IRLS weight."""
    if loss == "soft_l1":
        return 1.0 / np.sqrt(1.0 + z)
    if loss == "huber":
        return np.where(z <= 1.0, 1.0, 1.0 / np.sqrt(np.maximum(z, 1.0)))
    if loss == "cauchy":
        return 1.0 / (1.0 + z)
    return np.ones_like(z)


def _solve(
    x: NDArray[np.float64], y: NDArray[np.float64], loss: Loss, f_scale: float | None
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Coefficients and standard errors."""
    n, p = x.shape
    if np.linalg.matrix_rank(x) < p:
        raise ValueError("design matrix is rank deficient: a term does not vary in the data")
    beta, *_ = np.linalg.lstsq(x, y, rcond=None)
    w = np.ones(n)
    if loss != "linear":
        r0 = y - x @ beta
        if f_scale is None:
            mad = float(np.median(np.abs(r0 - np.median(r0))))
            f_scale = max(1.4826 * mad, 1e-9 * max(float(np.max(np.abs(y))), 1.0))
        res = least_squares(
            lambda b: x @ b - y, beta, jac=lambda b: x, loss=loss, f_scale=f_scale, method="trf"
        )
        beta = res.x
        w = _rho_prime(loss, ((y - x @ beta) / f_scale) ** 2)
    r = y - x @ beta
    if n > p:
        s2 = float(np.sum(w * r**2) / (n - p))
        cov = s2 * np.linalg.pinv(x.T @ (w[:, None] * x))
        se = np.sqrt(np.clip(np.diag(cov), 0.0, None))
    else:
        se = np.full(p, np.nan)
    return beta, se


def _points(
    df: pd.DataFrame, value_col: str, reduce: Stat | None, blocks_col: str, bytes_col: str
) -> pd.DataFrame:
    if reduce is None:
        return df.copy()
    keys = [
        c for c in ("backend", "variant", "op", "shape", bytes_col, blocks_col) if c in df.columns
    ]
    if "has_partial" in df.columns:
        keys.append("has_partial")
    return reduce_points(df, keys, value_col, reduce)


def _fit(
    df: pd.DataFrame,
    *,
    group: int | None,
    value_col: str,
    blocks_col: str,
    bytes_col: str,
    partial: bool | None,
    reduce: Stat | None,
    loss: Loss,
    f_scale: float | None,
) -> CostModel:
    pts = _points(df, value_col, reduce, blocks_col, bytes_col)
    pts = pts[np.isfinite(pts[value_col].to_numpy(dtype=float))].reset_index(drop=True)
    base = (
        ("fixed", "per_block")
        if group is None
        else ("fixed", "per_group_iter", "per_leftover_block")
    )
    hp = (
        pts["has_partial"].to_numpy(dtype=float)
        if "has_partial" in pts.columns
        else has_partial(pts[bytes_col])
        if bytes_col in pts.columns
        else np.zeros(len(pts))
    )
    if partial is None:
        partial = bool(np.ptp(hp) > 0) if len(hp) else False
    terms = (*base, "per_partial") if partial else base
    x = _design(pts.assign(has_partial=hp), terms, group, blocks_col, bytes_col)
    y = pts[value_col].to_numpy(dtype=float)
    if len(y) < len(terms):
        raise ValueError(f"{len(y)} points cannot fit {len(terms)} terms")
    beta, se = _solve(x, y, loss, f_scale)
    fitted = x @ beta
    resid = y - fitted
    tss = float(np.sum((y - y.mean()) ** 2))
    r2 = 1.0 - float(np.sum(resid**2)) / tss if tss > 0 else float("nan")
    pts = pts.assign(has_partial=hp, y=y, fitted=fitted, resid=resid, rel_resid=resid / fitted)
    return CostModel(
        terms=terms,
        coef=dict(zip(terms, map(float, beta), strict=True)),
        stderr=dict(zip(terms, map(float, se), strict=True)),
        r2=r2,
        rmse=float(np.sqrt(np.mean(resid**2))),
        n_points=len(y),
        loss=loss,
        reduce=reduce,
        group=group,
        value_col=value_col,
        blocks_col=blocks_col,
        bytes_col=bytes_col,
        points=pts,
    )


def fit_cost(
    df: pd.DataFrame,
    *,
    value_col: str = "ns",
    blocks_col: str = "blocks",
    bytes_col: str = "bytes",
    partial: bool | None = None,
    reduce: Stat | None = "min",
    loss: Loss = "linear",
    f_scale: float | None = None,
) -> CostModel:
    """Fit ``fixed + per_block*blocks (+ per_partial*has_partial)`` to one case's rows.

    ``partial=None`` includes the partial term only when ``has_partial`` varies in the data.
    Filter ``df`` to one backend/variant/op first, or use :func:`fit_by`.
    """
    return _fit(
        df,
        group=None,
        value_col=value_col,
        blocks_col=blocks_col,
        bytes_col=bytes_col,
        partial=partial,
        reduce=reduce,
        loss=loss,
        f_scale=f_scale,
    )


def fit_grouped(
    df: pd.DataFrame,
    group: int,
    *,
    value_col: str = "ns",
    blocks_col: str = "blocks",
    bytes_col: str = "bytes",
    partial: bool | None = None,
    reduce: Stat | None = "min",
    loss: Loss = "linear",
    f_scale: float | None = None,
) -> CostModel:
    """Fit ``fixed + per_group_iter*(blocks//group) + per_leftover_block*(blocks%group)``.

    Plus ``per_partial*has_partial`` as in :func:`fit_cost`.  ``model.leftover_penalty`` is
    how much more a leftover block costs than ``per_group_iter / group``.
    """
    if group < 2:
        raise ValueError("group must be >= 2")
    return _fit(
        df,
        group=group,
        value_col=value_col,
        blocks_col=blocks_col,
        bytes_col=bytes_col,
        partial=partial,
        reduce=reduce,
        loss=loss,
        f_scale=f_scale,
    )


def fit_by(
    df: pd.DataFrame,
    by: Sequence[str] = ("backend", "variant", "op"),
    *,
    group: int | Mapping[Any, int] | None = None,
    **kwargs: Any,
) -> dict[tuple[Any, ...], CostModel]:
    """One model per ``by`` group: :func:`fit_cost`, or :func:`fit_grouped` if ``group``.

    ``group`` may be a mapping from the group key tuple to its group width.
    """
    by = [c for c in by if c in df.columns]
    out: dict[tuple[Any, ...], CostModel] = {}
    for key, gdf in df.groupby(by, observed=True, sort=True):
        key = key if isinstance(key, tuple) else (key,)
        g = group.get(key) if isinstance(group, Mapping) else group
        out[key] = fit_cost(gdf, **kwargs) if g is None else fit_grouped(gdf, g, **kwargs)
    return out


def coef_table(
    models: Mapping[tuple[Any, ...], CostModel], by: Sequence[str] = ("backend", "variant", "op")
) -> pd.DataFrame:
    """Wide table: key columns, then coefficient and ``se_<term>`` per term, r2, rmse, n."""
    rows = []
    for key, m in models.items():
        row: dict[str, Any] = dict(zip(by, key, strict=False))
        for t in m.terms:
            row[t] = m.coef[t]
            row[f"se_{t}"] = m.stderr[t]
        if m.group is not None:
            row["group"] = m.group
            row["leftover_penalty"] = m.leftover_penalty
        row.update(r2=m.r2, rmse=m.rmse, n=m.n_points)
        rows.append(row)
    return pd.DataFrame(rows)


def excess(
    df: pd.DataFrame,
    model: CostModel,
    *,
    rtol: float = 0.10,
    reduce: Stat | None | Literal["model"] = "model",
) -> pd.DataFrame:
    """Measured vs model per point; ``flagged`` where measured > model * (1 + rtol).

    Returns the points (reduced like the model unless ``reduce`` says otherwise) with
    ``measured``, ``predicted``, ``excess`` (= measured / predicted - 1) and ``flagged``,
    sorted by blocks.  Use it where leftover blocks cost more than the model says.
    """
    red = model.reduce if reduce == "model" else reduce
    pts = _points(df, model.value_col, red, model.blocks_col, model.bytes_col)
    measured = pts[model.value_col].to_numpy(dtype=float)
    predicted = model.predict(pts)
    out = pts.assign(measured=measured, predicted=predicted, excess=measured / predicted - 1.0)
    out["flagged"] = out["excess"] > rtol
    return out.sort_values([model.blocks_col]).reset_index(drop=True)
