"""03_tail_sizes: leftover blocks t = 0..group-1 after whole groups and partial bytes 0..15,
cost models (fixed + per block + per partial block, and the grouped model) per backend and
variant with their fit quality, and where the leftover costs more than the model says."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.ticker import MaxNLocator, PercentFormatter

from ..analysis import coef_table, excess, fit_cost, fit_grouped
from ..backends import get
from ..variant import Variant
from .block_counts import PALETTE
from .session import Profile, empty_figure, fmt_list, get_profile, plural

RTOL = 0.10  # excess: measured above the model by more than this


def geometry(backend: str) -> tuple[int, int]:
    """(group, stitch_min) of a backend's default variant."""
    v = Variant().resolved(get(backend))
    return int(v.group), int(v.stitch_min)


def plan(backend: str, profile: str | Profile) -> list[int]:
    """Byte sizes for one backend: ``stitch_min + k * group + t`` blocks for the profile's k
    and every leftover t < group (tiny: a few), the next whole group, and partial bytes
    p = 1..15 on top of a block count with leftover blocks."""
    prof = get_profile(profile)
    g, s = geometry(backend)
    ks = prof.pick((0,), (0, 1), (0, 1, 2))
    ts = prof.pick(sorted({0, 1, g // 2, g - 1}), range(g), range(g))
    nbs = {s + k * g + t for k in ks for t in ts} | {s + (max(ks) + 1) * g}
    partial_at = prof.pick([s + g // 2], [s + g // 2], [s, s + g // 2, s + g + 1])
    ps = prof.pick((1, 8, 15), range(1, 16), range(1, 16))
    return sorted({16 * b for b in nbs} | {16 * b + p for b in partial_at for p in ps})


def tidy(df: pd.DataFrame) -> pd.DataFrame:
    """vgkernels rows with ``ns`` (best of k per run), ``whole`` blocks (n // 16), ``partial``
    bytes (n % 16), and for whole >= stitch_min the ``groups_done`` k and ``leftover`` t of
    whole = stitch_min + k * group + t."""
    t = df[df["impl"] == "vgkernels"].copy()
    t["ns"] = t["min_ns"].astype(float)
    n = t["n"].astype(int)
    t["whole"] = n // 16
    t["partial"] = n % 16
    g = t["group"].astype(int)
    s = t["stitch_min"].astype(int)
    rel = t["whole"] - s
    t["groups_done"] = np.where(rel >= 0, rel // g, -1)
    t["leftover"] = np.where(rel >= 0, rel % g, -1)
    return t


def fit_models(df: pd.DataFrame, ops: tuple[str, ...] = ("seal", "gather")
               ) -> tuple[dict[tuple, Any], dict[tuple, Any]]:
    """(linear, grouped) cost models per (backend, tail, op), fitted to the best of the runs
    at each size."""
    t = tidy(df)
    lin: dict[tuple, Any] = {}
    grp: dict[tuple, Any] = {}
    for (be, tail, op), g in t.groupby(["backend", "tail", "op"], observed=True):
        if op not in ops or g["bytes"].nunique() < 4:
            continue
        key = (str(be), str(tail), str(op))
        lin[key] = fit_cost(g, value_col="ns")
        try:
            grp[key] = fit_grouped(g, int(g["group"].iloc[0]), value_col="ns")
        except ValueError:  # e.g. one group count only: the grouped model is not identified
            pass
    return lin, grp


def model_table(lin: dict[tuple, Any], grp: dict[tuple, Any]) -> pd.DataFrame:
    """One row per (backend, tail, op): both models' coefficients (ns) and fit quality."""
    by = ("backend", "tail", "op")
    a = coef_table(lin, by=by)
    if a.empty:
        return a
    a = a.rename(columns={"r2": "r2_linear", "rmse": "rmse_linear", "n": "points"})
    if grp:
        b = coef_table(grp, by=by).drop(columns=["n"])
        b = b.rename(columns={"fixed": "fixed_grouped", "se_fixed": "se_fixed_grouped",
                              "per_partial": "per_partial_grouped",
                              "se_per_partial": "se_per_partial_grouped",
                              "r2": "r2_grouped", "rmse": "rmse_grouped"})
        a = a.merge(b, on=list(by), how="left")
    return a


def excess_table(df: pd.DataFrame, lin: dict[tuple, Any], rtol: float = RTOL) -> pd.DataFrame:
    """Measured against the linear model at every point, flagged above ``rtol``."""
    t = tidy(df)
    out = []
    for (be, tail, op), m in lin.items():
        g = t[(t["backend"] == be) & (t["tail"] == tail) & (t["op"] == op)]
        e = excess(g, m, rtol=rtol)
        out.append(e.assign(backend=be, tail=tail, op=op))
    if not out:
        return pd.DataFrame()
    e = pd.concat(out, ignore_index=True)
    e["whole"] = e["bytes"].astype(int) // 16
    e["partial"] = e["bytes"].astype(int) % 16
    cols = ["backend", "tail", "op", "bytes", "blocks", "whole", "partial", "measured",
            "predicted", "excess", "flagged"]
    return e[cols]


def remainder_cost(df: pd.DataFrame, op: str = "seal") -> pd.DataFrame:
    """What t leftover blocks after whole groups add: per backend and tail, a line
    ``fixed + per_block * t`` through ns(stitch_min + k*group + t) - ns(stitch_min + k*group)
    for t = 1..group-1 (whole blocks, no partial), pooled over k."""
    t = tidy(df)
    t = t[(t["op"] == op) & (t["partial"] == 0) & (t["leftover"] >= 0)]
    best = t.groupby(["backend", "tail", "groups_done", "leftover"], observed=True,
                     as_index=False)["ns"].min()
    rows = []
    for (be, tail), g in best.groupby(["backend", "tail"], observed=True):
        base = g[g["leftover"] == 0].set_index("groups_done")["ns"]
        d = g[(g["leftover"] > 0) & g["groups_done"].isin(base.index)]
        if len(d) < 2:
            continue
        y = d["ns"].to_numpy() - base.loc[d["groups_done"]].to_numpy()
        x = d["leftover"].to_numpy(dtype=float)
        if np.ptp(x) == 0:
            continue
        slope, fixed = np.polyfit(x, y, 1)
        resid = y - (fixed + slope * x)
        rows.append({"backend": be, "tail": tail, "op": op, "fixed_ns": fixed,
                     "per_block_ns": slope, "rmse": float(np.sqrt(np.mean(resid ** 2))),
                     "points": len(d), "t_max": int(x.max()),
                     "group": int(t[t["backend"] == be]["group"].iloc[0])})
    return pd.DataFrame(rows)


# -- plots -----------------------------------------------------------------------------------


def plot_leftover(df: pd.DataFrame, op: str = "seal"):
    """ns added by t leftover blocks over the whole-group time, per backend."""
    t = tidy(df)
    t = t[(t["op"] == op) & (t["partial"] == 0) & (t["leftover"] >= 0)]
    best = t.groupby(["backend", "tail", "groups_done", "leftover"], observed=True,
                     as_index=False)["ns"].min()
    base = best[best["leftover"] == 0].set_index(["backend", "tail", "groups_done"])["ns"]
    best = best[best.set_index(["backend", "tail", "groups_done"]).index.isin(base.index)]
    if best.empty:
        return empty_figure("no leftover block counts measured", "Leftover blocks")
    best = best.assign(
        added_ns=best["ns"].to_numpy() - base.loc[list(zip(
            best["backend"], best["tail"], best["groups_done"], strict=True))].to_numpy(),
        series="tail=" + best["tail"].astype(str),
        after=best["groups_done"].map(lambda k: f"after stitch_min + {k} groups"))
    order = list(dict.fromkeys(best["backend"]))
    g = sns.relplot(data=best, x="leftover", y="added_ns", hue="series", palette=PALETTE,
                    style="after", col="backend", col_order=order,
                    col_wrap=min(3, len(order)) or 1, kind="line", marker="o",
                    height=3.3, aspect=1.3, facet_kws={"sharey": False, "sharex": False})
    for ax in g.axes.flat:
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    g.set_axis_labels("leftover blocks t", "ns over the whole-group time")
    g.figure.suptitle(f"Leftover blocks after whole groups ({op})", y=1.02)
    return g


def plot_partial(df: pd.DataFrame, op: str = "seal"):
    """ns against partial bytes 0..15 on top of a fixed block count, per backend."""
    t = tidy(df)
    t = t[t["op"] == op]
    at = t[t["partial"] > 0].groupby("backend", observed=True)["whole"].min()
    sel = t[t["backend"].map(at).eq(t["whole"])]
    if sel.empty:
        return empty_figure("no partial sizes measured", "Partial bytes")
    best = sel.groupby(["backend", "tail", "whole", "partial"], observed=True,
                       as_index=False)["ns"].min()
    best["series"] = "tail=" + best["tail"].astype(str)
    order = list(dict.fromkeys(best["backend"]))
    g = sns.relplot(data=best, x="partial", y="ns", hue="series", palette=PALETTE,
                    col="backend", col_order=order, col_wrap=min(3, len(order)) or 1,
                    kind="line", marker="o", height=3.3, aspect=1.3,
                    facet_kws={"sharey": False})
    for be, ax in g.axes_dict.items():
        w = int(at.get(be, 0))
        ax.set_title(f"{be}: {w} whole blocks + p bytes")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # bytes: no 2.5
    g.set_axis_labels("partial bytes p", "ns per call (best of k)")
    g.figure.suptitle(f"Partial final block ({op})", y=1.02)
    return g


def plot_excess(ex: pd.DataFrame, rtol: float = RTOL):
    """Measured / model - 1 per point (linear model), per backend; the dashed line is the
    flagging threshold."""
    if ex.empty:
        return empty_figure("no models were fitted", "Excess over the model")
    e = ex[ex["op"] == "seal"].assign(series="tail=" + ex["tail"].astype(str))
    order = list(dict.fromkeys(e["backend"]))
    g = sns.relplot(data=e, x="bytes", y="excess", hue="series", palette=PALETTE,
                    style="flagged", markers={False: "o", True: "X"}, col="backend",
                    col_order=order, col_wrap=min(3, len(order)) or 1, kind="scatter",
                    height=3.3, aspect=1.3, facet_kws={"sharex": False})
    for ax in g.axes.flat:
        ax.axhline(rtol, color="0.4", ls="--", lw=0.9)
        ax.axhline(0, color="0.6", lw=0.7)
        ax.yaxis.set_major_formatter(PercentFormatter(1.0))
    g.set_axis_labels("bytes", "measured / model − 1")
    g.figure.suptitle("Where the tail costs more than the linear model says (seal)", y=1.02)
    return g


# -- prose -----------------------------------------------------------------------------------


def leftover_costs(rem: pd.DataFrame) -> dict[str, tuple[int, float, float]]:
    """Per backend measured with both tails: (t, ns with tail=split, ns with tail=full) for
    t = half the largest leftover, from the remainder lines."""
    out: dict[str, tuple[int, float, float]] = {}
    if not len(rem) or rem["tail"].nunique() < 2:
        return out
    for be, g in rem.groupby("backend"):
        w = g.set_index("tail")
        if {"split", "full"} <= set(w.index):
            t_mid = max(1, int(w.loc["full", "t_max"]) // 2)
            cs = w.loc["split", "fixed_ns"] + w.loc["split", "per_block_ns"] * t_mid
            cf = w.loc["full", "fixed_ns"] + w.loc["full", "per_block_ns"] * t_mid
            out[str(be)] = (t_mid, float(cs), float(cf))
    return out


def recommendation(rem: pd.DataFrame, ex: pd.DataFrame, rtol: float = RTOL,
                   tol: float = 0.02) -> str:
    """Which tail makes leftover blocks cheaper per backend, and whether any size needs a
    look (above the linear model by more than ``rtol``)."""
    costs = leftover_costs(rem)
    full = [be for be, (_, cs, cf) in costs.items() if cs > 0 and cf < cs * (1 - tol)]
    split = [be for be, (_, cs, cf) in costs.items() if cs > 0 and cf > cs * (1 + tol)]
    even = [be for be in costs if be not in full and be not in split]
    parts = []
    if full:
        parts.append(f"`tail=full` for leftover blocks on {fmt_list(full)}")
    if split:
        parts.append(f"`tail=split` on {fmt_list(split)}")
    if even:
        parts.append(f"either tail on {fmt_list(even)} (within {tol:.0%})")
    if not parts:
        parts.append("no tail choice can be made (the remainder was not measured with both "
                     "tails)")
    flagged = (sorted(set(ex.loc[ex["flagged"] & (ex["op"] == "seal"), "backend"]))
               if len(ex) else [])
    parts.append(f"look at the sizes flagged on {fmt_list(flagged)} (above the linear model "
                 f"by more than {rtol:.0%})" if flagged else
                 f"no size needs a look (none above the linear model by more than {rtol:.0%})")
    return "; ".join(parts) + "."


def conclusions(models: pd.DataFrame, rem: pd.DataFrame, ex: pd.DataFrame,
                rtol: float = RTOL) -> list[str]:
    """Per backend and tail, computed statements from the cost models, the leftover lines and the
    excess."""
    lines = []
    if models.empty:
        return ["No cost model could be fitted (too few sizes measured)."]
    for r in models[models["op"] == "seal"].itertuples():
        be, tail = r.backend, r.tail
        part = getattr(r, "per_partial", np.nan)
        txt = (f"**{be}, tail={tail}** (seal in place): {r.fixed:.1f} ns + "
               f"{r.per_block:.2f} ns per block"
               + (f", {part:+.1f} ns for a partial final block" if np.isfinite(part) else "")
               + f" (R² {r.r2_linear:.3f}, RMSE {r.rmse_linear:.1f} ns over {r.points} sizes)")
        if np.isfinite(getattr(r, "per_group_iter", np.nan)):
            txt += (f"; grouped: {r.per_group_iter:.1f} ns per group of {int(r.group)} "
                    f"({r.per_group_iter / r.group:.2f} ns per block) and "
                    f"{r.per_leftover_block:.2f} ns per leftover block (penalty "
                    f"{r.leftover_penalty:+.2f} ns per block; R² {r.r2_grouped:.3f})")
        rr = rem[(rem["backend"] == be) & (rem["tail"] == tail)] if len(rem) else rem
        if len(rr):
            q = rr.iloc[0]
            txt += (f"; the remainder of 1–{int(q.t_max)} blocks after the {int(q.group)}-block "
                    f"loop costs {q.fixed_ns:.1f} ns + {q.per_block_ns:.2f} ns per block")
        e = ex[(ex["backend"] == be) & (ex["tail"] == tail) & (ex["op"] == "seal")] \
            if len(ex) else ex
        if len(e):
            f = e[e["flagged"]]
            if len(f):
                worst = f.loc[f["excess"].idxmax()]
                where = (f"; flagged: {fmt_list([int(b) for b in f['bytes']])} B"
                         if len(f) > 1 else "")
                txt += (f"; {len(f)} of {len(e)} sizes {'exceeds' if len(f) == 1 else 'exceed'}"
                        f" the linear model by more than {rtol:.0%} (worst "
                        f"{worst.excess:+.0%} at {int(worst.bytes)} B{where})")
            else:
                txt += (f"; no size exceeds the linear model by more than {rtol:.0%} "
                        f"(largest {e['excess'].max():+.1%})")
        lines.append(txt + ".")
    for be, (t_mid, cs, cf) in leftover_costs(rem).items():
        lines.append(f"**{be}**: {plural(t_mid, 'leftover block')} cost {cs:.1f} ns with "
                     f"tail=split and {cf:.1f} ns with tail=full ({cf / cs - 1:+.0%})."
                     if cs > 0 else
                     f"**{be}**: leftover blocks cost nothing measurable with tail=split.")
    return lines
