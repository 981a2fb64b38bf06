"""05_two_slice: the two-slice path first against copy first (and the gather) at the TLS
record shape (a piece of n bytes, then one byte), around every n % 16, from the short path's
sizes up."""

from __future__ import annotations

from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from ..backends import BACKENDS
from .session import Profile, empty_figure, fmt_list, fmt_range, get_profile

THREAD_SIZES = (512, 768, 1024, 1500, 2000, 3000, 511, 767, 2047)


def sizes(profile: str | Profile) -> list[int]:
    """n = 16..3000 around every n % 16 (0..15, 15 included), plus the thread's sizes; 112..127
    and 128..143 straddle the short path's limit (128 bytes with the byte)."""
    prof = get_profile(profile)
    if prof.tiny:
        return [127, 511, 512, 1023, 1024]
    bases = prof.pick((), (112, 1024),
                      (16, 64, 112, 128, 256, 512, 768, 1024, 1536, 2048, 2560, 2976))
    around = {b + r for b in bases for r in range(16)}
    return sorted(around | set(THREAD_SIZES))


def has_two_slice(backend: Any) -> bool:
    """Whether a backend row has a two-slice entry."""
    return bool(getattr(backend, "two_slice", False))


def table(df: pd.DataFrame) -> pd.DataFrame:
    """Per backend and n: two-slice first, copy first, gather (best of k, ns), and the
    thread's ratio copy first / two-slice first (plus gather / two-slice first)."""
    if df.empty:
        return pd.DataFrame()
    t = df[df["impl"] == "vgkernels"].assign(ns=df["min_ns"].astype(float))
    best = t.groupby(["backend", "n", "op"], observed=True)["ns"].min().unstack("op")
    best = best.reindex(columns=["two_slice", "copy_ip", "gather"])
    out = best.reset_index().rename(columns={"two_slice": "two-slice first",
                                             "copy_ip": "copy first", "gather": "gather"})
    out.columns.name = None
    out.insert(2, "n % 16", out["n"].astype(int) % 16)
    out["copy first / two-slice first"] = out["copy first"] / out["two-slice first"]
    out["gather / two-slice first"] = out["gather"] / out["two-slice first"]
    return out.sort_values(["backend", "n"]).reset_index(drop=True)


def plot(tab: pd.DataFrame):
    """copy first / two-slice first against n per backend; n % 16 == 15 marked."""
    if tab.empty or tab["two-slice first"].isna().all():
        return empty_figure("no backend with a two-slice path was measured",
                            "two-slice first vs copy first")
    bes = list(dict.fromkeys(tab["backend"]))
    fig, axes = plt.subplots(len(bes), 2, figsize=(12, 3.6 * len(bes)), squeeze=False)
    for (ax1, ax2), be in zip(axes, bes, strict=True):
        t = tab[tab["backend"] == be].sort_values("n")
        for col, c in (("two-slice first", "#1b9e77"), ("copy first", "#d95f02"),
                       ("gather", "#7570b3")):
            ax1.plot(t["n"], t[col], marker="o", ms=3, lw=1.0, color=c, label=col)
        ax1.set_xlabel("n (then 1 byte)")
        ax1.set_ylabel("ns per call (best of k)")
        ax1.set_title(f"{be}: time")
        ax1.legend(fontsize=8)
        m15 = t["n % 16"] == 15
        ax2.scatter(t.loc[~m15, "n % 16"], t.loc[~m15, "copy first / two-slice first"],
                    color="#1b9e77", s=18, label="n % 16 ≠ 15")
        ax2.scatter(t.loc[m15, "n % 16"], t.loc[m15, "copy first / two-slice first"],
                    color="#d62728", marker="X", s=40, label="n % 16 = 15")
        ax2.axhline(1.0, color="0.3", lw=0.8)
        ax2.set_xticks(range(16))
        ax2.set_xlabel("n % 16")
        ax2.set_ylabel("copy first / two-slice first")
        ax2.set_title(f"{be}: above 1, the two-slice path first is faster")
        ax2.legend(fontsize=8)
    fig.tight_layout()
    return fig


def conclusions(tab: pd.DataFrame, chosen: list[str], eligible: list[str]) -> list[str]:
    """Per backend, computed statements: two-slice first against copy first, n % 16 = 15 apart."""
    if not eligible:
        have = [b.name for b in BACKENDS if has_two_slice(b)]
        return [f"No backend with a two-slice path is measured here (selected: "
                f"{', '.join(chosen) or 'none'}; backends with one: "
                f"{', '.join(have) or 'none'}), so there is nothing to compare."]
    lines = []
    for be in eligible:
        t = tab[tab["backend"] == be].dropna(subset=["two-slice first", "copy first"]) \
            if len(tab) else tab
        if t.empty:
            lines.append(f"**{be}**: no size was measured with both orders (see the sweep "
                         "notes).")
            continue
        r = t["copy first / two-slice first"]
        m15 = t["n % 16"] == 15
        other, at15 = r[~m15], r[m15]
        txt = f"**{be}**: "
        if len(other):
            faster = int((other > 1).sum())
            gain = other.max() - 1
            by = (f", by up to {gain:.1%}" if gain >= 0.0005 else
                  ", by less than 0.05%" if faster else "")
            txt += (f"where n % 16 ≠ 15 ({len(other)} sizes) copy first / two-slice first is "
                    f"{fmt_range(other.min(), other.max(), '.2f')} (median "
                    f"{other.median():.2f}): the two-slice path first is faster at {faster} "
                    f"of them{by}")
        if len(at15):
            verdict = ("slower at every one" if (at15 < 1).all() else
                       "faster at every one" if (at15 > 1).all() else
                       f"faster at {int((at15 > 1).sum())} of {len(at15)}")
            txt += (("; " if len(other) else "") +
                    f"at n % 16 = 15 (n = {fmt_list(t.loc[m15, 'n'].astype(int).tolist())}), "
                    f"where the extra byte completes the last block, the ratio is "
                    f"{fmt_range(at15.min(), at15.max(), '.2f')}: the two-slice path first is "
                    f"{verdict}")
        g = t["gather / two-slice first"].dropna()
        if len(g):
            txt += (f"; the gather takes {g.min():.2f}–{g.max():.2f}× the two-slice path's "
                    "time")
        lines.append(txt + ".")
        slow = t[r < 1]
        if len(slow) and not (slow["n % 16"] == 15).all():
            lines.append(f"**{be}**: copy first also wins at n = "
                         f"{fmt_list(slow.loc[slow['n % 16'] != 15, 'n'].astype(int).tolist())}"
                         " (n % 16 ≠ 15).")
    return lines


def recommendation(tab: pd.DataFrame, eligible: list[str], tol: float = 0.01) -> str:
    """Per backend with a two-slice path: take it first where it beats copying first by more
    than ``tol`` at the median n, else copy first (or either)."""
    if not eligible or tab.empty:
        return "none: no backend with a two-slice path was measured here."
    use, copy, even = [], [], []
    for be in eligible:
        r = tab.loc[tab["backend"] == be, "copy first / two-slice first"].dropna()
        if r.empty:
            continue
        med = float(r.median())
        (use if med > 1 + tol else copy if med < 1 - tol else even).append(f"{be} "
                                                                            f"({med:.2f})")
    parts = []
    if use:
        parts.append(f"seal TLS records with the two-slice path first on {fmt_list(use)}")
    if copy:
        parts.append(f"copy first on {fmt_list(copy)}")
    if even:
        parts.append(f"either order on {fmt_list(even)} (within {tol:.0%})")
    return ("; ".join(parts) + " (median copy first / two-slice first in brackets)."
            if parts else "none: no size was measured with both orders.")


def headline(tab: pd.DataFrame) -> dict[str, Any]:
    """Per backend: the median copy first / two-slice first ratio, apart and at n % 16 = 15."""
    out: dict[str, dict[str, Any]] = {}
    if tab.empty:
        return {"backends": out}
    for be, t in tab.groupby("backend"):
        r = t["copy first / two-slice first"].dropna()
        m = t.loc[r.index, "n % 16"] == 15
        out[str(be)] = {"two_slice_gain_median": float(np.median(r[~m])) if (~m).any()
                        else None,
                        "two_slice_at_15": float(np.median(r[m])) if m.any() else None}
    return {"backends": out}
