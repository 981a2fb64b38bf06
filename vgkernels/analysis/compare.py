"""Two runs side by side (the idea of pyperf's compare_to and asv compare): per case, the ratio
of B to A, both runs' spreads, and whether the change exceeds the noise.

A change is significant when both hold: the samples differ (Mann-Whitney U, two-sided,
p < alpha, where per-sample rows exist; else the medians are further apart than both runs'
relative interquartile ranges), and the medians differ by more than ``min_change``.  The VM
this project runs on has slow phases of 15-80% lasting seconds, so the second rule matters.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from scipy import stats

KEYS = ["impl", "backend", "variant", "op", "shape", "pieces", "aligned", "n", "bytes",
        "key_bytes", "aad_bytes"]
SAMPLE_KEYS = ["impl", "backend", "variant", "op", "shape", "pieces", "aligned", "n", "bytes"]


def _key_cols(df: pd.DataFrame, keys: list[str]) -> list[str]:
    return [k for k in keys if k in df.columns]


def _per_case(summary: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """One row per case: the median of the runs' medians, the worst spread, the host."""
    g = summary.groupby(keys, dropna=False, observed=True, sort=False)
    out = g.agg(median_ns=("median_ns", "median"), min_ns=("min_ns", "min"),
                spread=("spread", "max"), runs=("median_ns", "size"))
    if "host" in summary.columns:
        out["host"] = g["host"].first()
    if "llvm_cpu" in summary.columns:
        out["llvm_cpu"] = g["llvm_cpu"].first()
    return out


def compare(a: pd.DataFrame, b: pd.DataFrame, a_samples: pd.DataFrame | None = None,
            b_samples: pd.DataFrame | None = None, alpha: float = 0.01,
            min_change: float = 0.02) -> pd.DataFrame:
    """The cases both runs measured: ``ratio`` = B's median / A's (below 1: B faster),
    ``spread_a``/``spread_b``, ``p`` (Mann-Whitney, NaN without samples), ``significant`` and
    ``change`` ("faster", "slower", "same")."""
    keys = [k for k in _key_cols(a, KEYS) if k in b.columns]
    if not keys:
        raise ValueError("the two runs share no case columns")
    pa, pb = _per_case(a, keys), _per_case(b, keys)
    both = pa.merge(pb, how="inner", left_index=True, right_index=True, suffixes=("_a", "_b"))
    if both.empty:
        return pd.DataFrame(columns=[*keys, "median_ns_a", "median_ns_b", "ratio", "spread_a",
                                     "spread_b", "p", "significant", "change"])
    both["ratio"] = both["median_ns_b"] / both["median_ns_a"]
    both["p"] = np.nan
    if a_samples is not None and b_samples is not None and len(a_samples) and len(b_samples):
        skeys = [k for k in _key_cols(a_samples, SAMPLE_KEYS) if k in b_samples.columns
                 and k in keys]
        ga = dict(list(a_samples.groupby(skeys, dropna=False, observed=True)))
        gb = dict(list(b_samples.groupby(skeys, dropna=False, observed=True)))
        idx = both.index.to_frame(index=False)
        ps = []
        for _, row in idx.iterrows():
            k = tuple(row[c] for c in skeys)
            k = k if len(k) > 1 else k[0]
            xa, xb = ga.get(k), gb.get(k)
            if xa is None or xb is None or len(xa) < 3 or len(xb) < 3:
                ps.append(np.nan)
                continue
            ps.append(stats.mannwhitneyu(xa["ns"], xb["ns"], alternative="two-sided").pvalue)
        both["p"] = ps
    noise = both[["spread_a", "spread_b"]].max(axis=1).fillna(0.0)
    big = (both["ratio"] - 1).abs() > min_change
    by_test = both["p"] < alpha
    by_spread = (np.log(both["ratio"]).abs() > np.log1p(noise))
    both["significant"] = big & np.where(both["p"].notna(), by_test, by_spread)
    both["change"] = np.where(~both["significant"], "same",
                              np.where(both["ratio"] < 1, "faster", "slower"))
    return both.reset_index()


def summary(cmp: pd.DataFrame) -> dict[str, float | int]:
    """Geometric mean of the ratios and how many cases changed each way."""
    r = cmp["ratio"].dropna()
    return {"cases": int(len(cmp)),
            "geomean_ratio": float(math.exp(np.log(r).mean())) if len(r) else math.nan,
            "faster": int((cmp["change"] == "faster").sum()),
            "slower": int((cmp["change"] == "slower").sum()),
            "same": int((cmp["change"] == "same").sum()),
            "worst_ratio": float(r.max()) if len(r) else math.nan,
            "best_ratio": float(r.min()) if len(r) else math.nan}


def paired(samples: pd.DataFrame, keys: list[str], n_boot: int = 500, seed: int = 0
           ) -> pd.DataFrame:
    """Same-run A/B: ``samples`` has a ``side`` column ("head" or "base"), a ``round`` and
    ``ns`` per sample.  Per case (``keys``), each round's head sample over the base sample of
    the same round; ``ratio`` is the median of those, ``lo``/``hi`` its 95% bootstrap interval,
    ``min_ratio`` the ratio of the two sides' minima.  Pairing by round cancels the drift both
    sides saw within the round.

    ``quiet_ratio``: the median over the quieter half of the rounds (`round_slowness`).  The
    VM's slow phases last seconds, so they slow whole rounds, and they can move a ratio as
    well as both sides: on Zen 4 a change read 0.98 in quiet rounds and 1.05 in slow ones."""
    wide = samples.pivot_table(index=[*keys, "round"], columns="side", values="ns",
                               aggfunc="first").dropna(subset=["head", "base"])
    quiet = quiet_rounds(round_slowness(samples, keys))
    rng = np.random.default_rng(seed)
    rows = []
    for key, g in wide.groupby(level=list(range(len(keys))), sort=False):
        r = (g["head"] / g["base"]).to_numpy()
        rq = r[g.index.get_level_values("round").isin(quiet)]
        meds = np.median(r[rng.integers(0, len(r), size=(n_boot, len(r)))], axis=1)
        lo, hi = np.quantile(meds, [0.025, 0.975])
        rows.append({**dict(zip(keys, key if isinstance(key, tuple) else (key,), strict=True)),
                     "base_ns": float(g["base"].median()), "head_ns": float(g["head"].median()),
                     "ratio": float(np.median(r)), "lo": float(lo), "hi": float(hi),
                     "quiet_ratio": float(np.median(rq)) if len(rq) else math.nan,
                     "min_ratio": float(g["head"].min() / g["base"].min()), "rounds": len(r)})
    return pd.DataFrame(rows)


def round_slowness(samples: pd.DataFrame, keys: list[str]) -> pd.Series:
    """Per round: the median, over every case (``keys``) and side, of its sample over that
    case and side's fastest sample (1.0: the round ran at the run's best)."""
    fastest = samples.groupby([*keys, "side"])["ns"].transform("min")
    return (samples["ns"] / fastest).groupby(samples["round"]).median()


def quiet_rounds(slowness: pd.Series) -> pd.Index:
    """The quieter half of the rounds: those at most as slow as the median round."""
    return slowness.index[slowness <= slowness.median()]
