"""The copy_below threshold: from which size on does operation B (gather) beat A (copy+ip)?

Definition (PR thread): the threshold is the smallest measured size ``s`` such that for every
measured size ``>= s`` B is at least as fast as A.  Encrypt-from-pieces should copy the pieces
and seal in place for lengths ``< threshold`` and gather from ``threshold`` on.

* ``threshold == 0``: B wins at every measured size (never copy);
* ``threshold is None``: B loses at the largest measured size (no crossover: always copy);
* isolated wins of B below the threshold (non-monotonic regions) are ignored and reported.

"B at least as fast as A" at one size is decided by one of two rules:

* ``rule="stat"`` (default): ``stat(B) <= stat(A) * (1 + rtol)`` with ``stat`` the per-size
  minimum (best-of-k), median or mean of the samples;
* ``rule="mannwhitney"``: B wins unless a one-sided Mann-Whitney U test says the samples of B
  are stochastically larger than those of A scaled by ``1 + rtol`` (p < ``alpha``).

The confidence interval comes from a stratified bootstrap: the samples of every (group, size,
op) cell are resampled with replacement (seeded ``numpy.random.Generator``) and the threshold
is recomputed; ``ci_low``/``ci_high`` are the lower/upper ``(1 - ci)/2`` quantiles of the
replicate thresholds (conservative, on the measured sizes).  Prefer ``stat="median"`` for the
bootstrap: the minimum of a resample can never go below the sample minimum, so a best-of-k CI
is biased upward.

With several groups (``by``, e.g. piece shapes), B must win in every group: the combined
threshold is the maximum of the per-group thresholds (None if any is None).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray
from scipy import stats as sps

from ._frame import Stat, value_column

Rule = Literal["stat", "mannwhitney"]

_STAT_FUNCS = {"min": np.min, "median": np.median, "mean": np.mean}

__all__ = [
    "CrossoverResult",
    "copy_below",
    "copy_below_table",
    "crossover",
    "crossover_samples",
]


@dataclass(frozen=True, eq=False)
class CrossoverResult:
    """Outcome of a crossover search (sizes in the unit of the size column, usually bytes).

    ``threshold``: copy below this size (0: never copy; None: gather never wins from some
    size on).  ``ci_low``/``ci_high``: bootstrap interval of the threshold, None when that
    quantile is "no crossover" or when ``n_boot == 0``.  ``p_none``: fraction of bootstrap
    replicates without a crossover.  ``per_group``: threshold per group label.
    ``early_wins``: per group, sizes below the group threshold where B already won (the
    non-monotonic region, ignored).  ``curve``: per (group, size) statistics and decisions.
    """

    threshold: int | None
    ci_low: int | None
    ci_high: int | None
    ci_level: float
    n_boot: int
    p_none: float
    rule: str
    stat: str
    rtol: float
    per_group: dict[str, int | None]
    early_wins: dict[str, tuple[int, ...]]
    note: str
    curve: pd.DataFrame = field(repr=False)

    @property
    def non_monotonic(self) -> bool:
        """True when B won somewhere below the threshold before losing again."""
        return any(self.early_wins.values())

    @property
    def always(self) -> bool:
        """True when B wins at every measured size (threshold 0)."""
        return self.threshold == 0

    @property
    def never(self) -> bool:
        """True when there is no crossover (B still loses at the largest size)."""
        return self.threshold is None


# ----------------------------------------------------------------------------------------
# core


@dataclass(frozen=True)
class _Group:
    sizes: NDArray[np.float64]  # (m,) ascending
    a: list[NDArray[np.float64]]  # samples per size
    b: list[NDArray[np.float64]]


def _resample(x: NDArray[np.float64], rng: np.random.Generator, n_boot: int) -> NDArray:
    """Original samples in row 0, then ``n_boot`` resamples with replacement: (1 + n_boot, k)."""
    if n_boot == 0:
        return x[None, :]
    idx = rng.integers(0, x.size, size=(n_boot, x.size))
    return np.vstack([x[None, :], x[idx]])


def _wins(
    g: _Group,
    *,
    rule: Rule,
    stat: Stat,
    rtol: float,
    alpha: float,
    n_boot: int,
    rng: np.random.Generator,
) -> tuple[NDArray[np.bool_], NDArray[np.float64], NDArray[np.float64]]:
    """Win matrix (1 + n_boot, m) plus the point statistics of A and B per size."""
    f = _STAT_FUNCS[stat]
    m = g.sizes.size
    win = np.empty((1 + n_boot, m), dtype=bool)
    sa = np.empty(m)
    sb = np.empty(m)
    for j in range(m):
        ra = _resample(g.a[j], rng, n_boot)
        rb = _resample(g.b[j], rng, n_boot)
        va = f(ra, axis=1)
        vb = f(rb, axis=1)
        sa[j], sb[j] = va[0], vb[0]
        if rule == "stat":
            win[:, j] = vb <= va * (1.0 + rtol)
        else:
            res = sps.mannwhitneyu(
                rb, ra * (1.0 + rtol), alternative="greater", axis=1, method="asymptotic"
            )
            p = np.nan_to_num(np.asarray(res.pvalue, dtype=float), nan=1.0)
            win[:, j] = p >= alpha
    return win, sa, sb


def _thresholds(sizes: NDArray[np.float64], win: NDArray[np.bool_]) -> NDArray[np.float64]:
    """Per row: 0 if all win, inf if the last size loses, else the size after the last loss."""
    m = sizes.size
    lose = ~win
    any_lose = lose.any(axis=1)
    last = m - 1 - np.argmax(lose[:, ::-1], axis=1)
    nxt = last + 1
    after = np.where(nxt < m, sizes[np.minimum(nxt, m - 1)], np.inf)
    return np.where(any_lose, after, 0.0)


def _as_size(x: float) -> int | None:
    return None if not np.isfinite(x) else int(x)


def _solve(
    groups: Mapping[str, _Group],
    *,
    rule: Rule,
    stat: Stat,
    rtol: float,
    alpha: float,
    n_boot: int,
    ci: float,
    seed: int | np.random.Generator | None,
) -> CrossoverResult:
    if not groups:
        raise ValueError("no sizes with samples of both operations")
    if stat not in _STAT_FUNCS:
        raise ValueError(f"stat must be one of {sorted(_STAT_FUNCS)}, got {stat!r}")
    if rule not in ("stat", "mannwhitney"):
        raise ValueError(f"rule must be 'stat' or 'mannwhitney', got {rule!r}")
    if not 0.0 < ci < 1.0:
        raise ValueError("ci must be in (0, 1)")
    rng = np.random.default_rng(seed)
    per_row: list[NDArray[np.float64]] = []
    per_group: dict[str, int | None] = {}
    early: dict[str, tuple[int, ...]] = {}
    curves: list[pd.DataFrame] = []
    for label, g in groups.items():
        win, sa, sb = _wins(g, rule=rule, stat=stat, rtol=rtol, alpha=alpha, n_boot=n_boot, rng=rng)
        thr = _thresholds(g.sizes, win)
        per_row.append(thr)
        per_group[label] = _as_size(thr[0])
        below = g.sizes < thr[0]
        ew = tuple(int(s) for s in g.sizes[below & win[0]])
        if ew:
            early[label] = ew
        curves.append(
            pd.DataFrame(
                {
                    "group": label,
                    "size": g.sizes.astype(np.int64),
                    "a": sa,
                    "b": sb,
                    "ratio": sb / sa,
                    "win": win[0],
                }
            )
        )
    combined = np.max(np.vstack(per_row), axis=0)
    threshold = _as_size(combined[0])
    boot = combined[1:]
    if n_boot > 0:
        q = (1.0 - ci) / 2.0
        ci_low = _as_size(float(np.quantile(boot, q, method="lower")))
        ci_high = _as_size(float(np.quantile(boot, 1.0 - q, method="higher")))
        p_none = float(np.mean(~np.isfinite(boot)))
    else:
        ci_low = ci_high = None
        p_none = float("nan")
    return CrossoverResult(
        threshold=threshold,
        ci_low=ci_low,
        ci_high=ci_high,
        ci_level=ci,
        n_boot=n_boot,
        p_none=p_none,
        rule=rule,
        stat=stat,
        rtol=rtol,
        per_group=per_group,
        early_wins=early,
        note=_note(threshold, per_group, early),
        curve=pd.concat(curves, ignore_index=True),
    )


def _note(
    threshold: int | None,
    per_group: Mapping[str, int | None],
    early: Mapping[str, tuple[int, ...]],
) -> str:
    if threshold is None:
        lost = [k or "all" for k, v in per_group.items() if v is None]
        parts = [f"no crossover: B still loses at the largest size ({', '.join(lost)})"]
    elif threshold == 0:
        parts = ["B wins at every measured size"]
    else:
        parts = [f"B wins from {threshold} on"]
    for k, sizes in early.items():
        where = f" [{k}]" if k else ""
        parts.append(
            f"non-monotonic{where}: B also wins at {', '.join(map(str, sizes))} below "
            f"{per_group[k]} (ignored)"
        )
    return "; ".join(parts)


# ----------------------------------------------------------------------------------------
# public entry points


def crossover_samples(
    samples_a: Mapping[int, ArrayLike],
    samples_b: Mapping[int, ArrayLike],
    *,
    rtol: float = 0.01,
    stat: Stat = "median",
    rule: Rule = "stat",
    alpha: float = 0.05,
    n_boot: int = 1000,
    ci: float = 0.95,
    seed: int | np.random.Generator | None = 0,
) -> CrossoverResult:
    """Crossover of B over A from ``{size: samples}`` mappings (sizes present in both)."""
    sizes = sorted(set(samples_a) & set(samples_b))
    a = [np.asarray(samples_a[s], dtype=float).ravel() for s in sizes]
    b = [np.asarray(samples_b[s], dtype=float).ravel() for s in sizes]
    keep = [i for i in range(len(sizes)) if a[i].size and b[i].size]
    groups = {}
    if keep:
        groups[""] = _Group(
            np.asarray([sizes[i] for i in keep], dtype=float),
            [a[i] for i in keep],
            [b[i] for i in keep],
        )
    return _solve(
        groups, rule=rule, stat=stat, rtol=rtol, alpha=alpha, n_boot=n_boot, ci=ci, seed=seed
    )


def _check_single(df: pd.DataFrame, op_col: str, by: Sequence[str]) -> None:
    """Refuse to silently pool conditions that should be separate crossovers."""
    for c in ("backend", "aligned"):
        if c in df.columns and c not in by and df[c].nunique(dropna=False) > 1:
            raise ValueError(f"rows mix several {c!r} values: filter first or add it to by")
    if "variant" in df.columns and "variant" not in by:
        n = df.groupby(op_col, observed=True)["variant"].nunique(dropna=False)
        if (n > 1).any():
            raise ValueError("an op has several variants: filter first or add 'variant' to by")


def crossover(
    df: pd.DataFrame,
    *,
    a: str = "copy_ip",
    b: str = "gather",
    size_col: str = "bytes",
    value_col: str = "ns",
    op_col: str = "op",
    by: Sequence[str] | None = None,
    rtol: float = 0.01,
    stat: Stat = "median",
    rule: Rule = "stat",
    alpha: float = 0.05,
    n_boot: int = 1000,
    ci: float = 0.95,
    seed: int | np.random.Generator | None = 0,
) -> CrossoverResult:
    """Crossover of op ``b`` (gather) over op ``a`` (copy+ip) in a tidy per-sample frame.

    ``by`` (default: ``["shape"]`` when that column exists) splits the rows into groups that
    must all be won; the threshold is the max over groups.  Rows mixing several backends or
    alignments (not in ``by``), or several variants of one op, raise ``ValueError``.
    Without a ``value_col`` column the summarised ``f"{stat}_{value_col}"`` is used (one
    value per size: the bootstrap interval then collapses to the point estimate).
    """
    if by is None:
        by = ["shape"] if "shape" in df.columns else []
    by = list(by)
    value_col = value_column(df, value_col, stat)
    sub = df[df[op_col].isin([a, b])]
    sub = sub[np.isfinite(sub[value_col].to_numpy(dtype=float))]
    _check_single(sub, op_col, by)
    groups: dict[str, _Group] = {}
    grouped = sub.groupby(by, observed=True, sort=True) if by else [((), sub)]
    for key, gdf in grouped:
        key = key if isinstance(key, tuple) else (key,)
        label = ",".join(f"{c}={v}" for c, v in zip(by, key, strict=True))
        per = {
            op: {
                int(s): x[value_col].to_numpy(dtype=float)
                for s, x in gdf[gdf[op_col] == op].groupby(size_col, sort=True)
            }
            for op in (a, b)
        }
        sizes = sorted(set(per[a]) & set(per[b]))
        if sizes:
            groups[label] = _Group(
                np.asarray(sizes, dtype=float),
                [per[a][s] for s in sizes],
                [per[b][s] for s in sizes],
            )
    return _solve(
        groups, rule=rule, stat=stat, rtol=rtol, alpha=alpha, n_boot=n_boot, ci=ci, seed=seed
    )


def copy_below(
    df: pd.DataFrame,
    backend: str | None = None,
    *,
    variant: str | None = None,
    aligned_col: str = "aligned",
    **kwargs: Any,
) -> dict[tuple[str, bool], CrossoverResult]:
    """:func:`crossover` per (backend, aligned); ``backend``/``variant`` filter the rows."""
    sub = df
    if backend is not None:
        sub = sub[sub["backend"] == backend]
    if variant is not None:
        sub = sub[sub["variant"] == variant]
    out: dict[tuple[str, bool], CrossoverResult] = {}
    for (be, al), gdf in sub.groupby(["backend", aligned_col], observed=True, sort=True):
        out[(str(be), bool(al))] = crossover(gdf, **kwargs)
    return out


def copy_below_table(df: pd.DataFrame, backend: str | None = None, **kwargs: Any) -> pd.DataFrame:
    """One row per (backend, aligned): threshold, CI, p_none, non_monotonic, note.

    Keyword arguments go to :func:`copy_below` / :func:`crossover`.  Thresholds use the
    nullable ``Int64`` dtype (``<NA>`` = no crossover).
    """
    rows = [
        {
            "backend": be,
            "aligned": al,
            "threshold": r.threshold,
            "ci_low": r.ci_low,
            "ci_high": r.ci_high,
            "ci_level": r.ci_level,
            "n_boot": r.n_boot,
            "p_none": r.p_none,
            "non_monotonic": r.non_monotonic,
            "note": r.note,
        }
        for (be, al), r in copy_below(df, backend, **kwargs).items()
    ]
    cols = [
        "backend",
        "aligned",
        "threshold",
        "ci_low",
        "ci_high",
        "ci_level",
        "n_boot",
        "p_none",
        "non_monotonic",
        "note",
    ]
    out = pd.DataFrame(rows, columns=cols)
    for c in ("threshold", "ci_low", "ci_high"):
        out[c] = out[c].astype("Int64")
    return out
