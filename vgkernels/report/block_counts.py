"""02_block_counts: every block count 1..72 per backend, tail=split against tail=full in
alternating runs, in place and from two pieces (n + 1 bytes), against OpenSSL masked to the
same features; the PR thread's table; steps at group boundaries and the per-block slope."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
import seaborn as sns

from ..analysis import ab_table, fit_cost
from .display import sig
from .session import Profile, empty_figure, fmt_list, fmt_ns, fmt_pct, get_profile

THREAD_SIZES = (384, 640, 1024, 1088)  # the PR thread's rows
PALETTE = {"tail=split": "#d95f02", "tail=full": "#1b9e77", "OpenSSL": "#7570b3"}
SHOW = {"seal": "in place", "gather": "out of place (+1)", "copy_ip": "copy+ip (+1)",
        "openssl": "OpenSSL", "openssl_copy": "OpenSSL (+1)"}


def sizes(profile: str | Profile) -> list[int]:
    """Byte sizes: every block count 1..72 (tiny: a handful, the thread's 384 and 640 among
    them)."""
    prof = get_profile(profile)
    if prof.tiny:
        return [16, 32, 48, 240, 256, 272, 384, 496, 512, 528, 640]
    return [16 * b for b in range(1, 73)]


def tidy(df: pd.DataFrame) -> pd.DataFrame:
    """Summary rows with ``ns`` (best of k of each run), ``payload_blocks`` (n / 16) and a
    ``series`` label (tail=split / tail=full / OpenSSL) and ``shape`` label."""
    out = df.copy()
    out["ns"] = out["min_ns"].astype(float)
    out["payload_blocks"] = (out["n"].astype(int) // 16).astype(int)
    is_vg = out["impl"] == "vgkernels"
    is_aead = out["op"].astype(str).str.startswith("aead_")
    out["series"] = np.where(is_vg, "tail=" + out["tail"].astype(str),
                             np.where(is_aead, out["impl"].astype(str), "OpenSSL"))
    out["shape_label"] = np.where(out["op"].isin(["seal", "openssl", "aead_seal"]), "in place",
                                  np.where(out["op"].isin(["copy_ip", "aead_copy"]),
                                           "copy+ip (+1)", "out of place (+1)"))
    return out


def best(df: pd.DataFrame) -> pd.DataFrame:
    """Best of all runs per backend, series, op and size."""
    t = tidy(df) if "series" not in df.columns else df
    keys = ["backend", "impl", "series", "op", "shape_label", "n", "payload_blocks", "group",
            "stitch_min"]
    keys = [k for k in keys if k in t.columns]
    return t.groupby(keys, dropna=False, observed=True, as_index=False)["ns"].min()


def _range(vals: Sequence[float]) -> str:
    vals = [v for v in vals if np.isfinite(v)]
    if not vals:
        return "—"
    lo, hi = sig(min(vals)), sig(max(vals))
    return lo if lo == hi else f"{lo}–{hi}"


def thread_table(df: pd.DataFrame, backend: str,
                 sizes: Sequence[int] | None = THREAD_SIZES) -> pd.DataFrame:
    """The background thread's table for one backend: per size, "split runs → full runs" cells
    (best of k per run, runs in order) in place and from two pieces, and OpenSSL's range
    over its runs; plus the in-place change of the best full run over the best split run.
    Each EVP_AEAD peer (aws-lc, as in the thread) adds its in-place range, its copy + seal
    in place of n + 1 bytes (the thread's "+1" for aws-lc-rs) and its own gather
    (seal_scatter with the byte as extra_in)."""
    t = df[df["backend"] == backend]
    aead_peers = list(dict.fromkeys(t.loc[t["op"] == "aead_seal", "impl"].astype(str)))
    vg = t[(t["impl"] == "vgkernels") & t["op"].isin(["seal", "gather"])]
    if vg.empty:
        return pd.DataFrame()
    # size_col "n" would collide with reduce_points' count column "n": use a copy
    cells = ab_table(vg.assign(payload=vg["n"]), "split", "full", col="tail",
                     size_col="payload", by=["op"], decimals=sig)
    if sizes is not None:
        cells = cells[cells["n"].isin(list(sizes))]
    rows = []
    for n, g in cells.groupby("n", sort=True):
        row: dict[str, Any] = {"bytes": int(n)}
        for op, label in (("seal", "in place"), ("gather", "out of place (+1)")):
            r = g[g["op"] == op]
            row[label] = r["cell"].iloc[0] if len(r) else "—"
            if op == "seal":
                row["_change"] = float(r["ratio"].iloc[0] - 1) if len(r) else np.nan
        for op, label in (("openssl", "OpenSSL"), ("openssl_copy", "OpenSSL (+1)")):
            o = t[(t["op"] == op) & (t["n"] == n)]
            row[label] = _range(o["min_ns"].astype(float).tolist())
        for peer in aead_peers:
            for op, label in (("aead_seal", peer), ("aead_copy", f"{peer} copy+seal (+1)"),
                              ("aead_scatter", f"{peer} scatter (+1)")):
                o = t[(t["op"] == op) & (t["impl"] == peer) & (t["n"] == n)]
                row[label] = _range(o["min_ns"].astype(float).tolist())
        rows.append(row)
    out = pd.DataFrame(rows)
    if out.empty:
        return out
    out["in place change"] = [fmt_pct(x) for x in out.pop("_change")]
    extra = [c for peer in aead_peers for c in (peer, f"{peer} copy+seal (+1)",
                                                f"{peer} scatter (+1)")]
    return out[["bytes", "in place", "OpenSSL", "out of place (+1)", "OpenSSL (+1)", *extra,
                "in place change"]]


def increments(df: pd.DataFrame) -> pd.DataFrame:
    """Per backend / series / op: the time one more block adds (ns(b) - ns(b - 1)), with
    ``boundary`` True where b completes a group of the stitched loop (b >= stitch_min and
    b % group == 0)."""
    b = best(df)
    b = b[b["impl"] == "vgkernels"]
    out = []
    for _key, g in b.groupby(["backend", "series", "op"], observed=True):
        g = g.sort_values("payload_blocks")
        d = g["ns"].diff()
        step = g["payload_blocks"].diff()
        g = g.assign(delta_ns=np.where(step == 1, d, np.nan))
        out.append(g)
    if not out:
        return pd.DataFrame()
    r = pd.concat(out, ignore_index=True)
    grp = r["group"].astype(float)
    smin = r["stitch_min"].astype(float)
    r["boundary"] = (r["payload_blocks"] >= smin) & (r["payload_blocks"] % grp == 0)
    return r


def slopes(df: pd.DataFrame) -> pd.DataFrame:
    """Per backend, tail and op (seal in place, gather n+1): the per-block slope of a linear
    fit over the block counts the stitched loop takes (b >= stitch_min), its intercept and
    fit quality, the mean step at group boundaries and the median step elsewhere."""
    inc = increments(df)
    rows = []
    for (be, series, op), g in inc.groupby(["backend", "series", "op"], observed=True):
        if op not in ("seal", "gather"):
            continue
        smin = int(g["stitch_min"].iloc[0])
        grp = int(g["group"].iloc[0])
        big = g[g["payload_blocks"] >= smin]
        row: dict[str, Any] = {"backend": be, "tail": series.removeprefix("tail="), "op": op,
                               "group": grp, "stitch_min": smin, "points": len(big)}
        if len(big) >= 3:
            m = fit_cost(big.assign(blocks=big["payload_blocks"], bytes=big["n"]),
                         value_col="ns", reduce=None, partial=False)
            row.update(per_block_ns=m.coef["per_block"], fixed_ns=m.coef["fixed"], r2=m.r2)
        else:
            row.update(per_block_ns=np.nan, fixed_ns=np.nan, r2=np.nan)
        d = big.dropna(subset=["delta_ns"])
        row["boundary_step_ns"] = d.loc[d["boundary"], "delta_ns"].mean()
        row["other_step_ns"] = d.loc[~d["boundary"], "delta_ns"].median()
        rows.append(row)
    return pd.DataFrame(rows)


def leftover_compare(df: pd.DataFrame) -> pd.DataFrame:
    """In place, per backend and block count the stitched loop takes with leftover blocks
    (b >= stitch_min, b % group != 0): best full / best split - 1."""
    b = best(df)
    b = b[(b["impl"] == "vgkernels") & (b["op"] == "seal")]
    wide = b.pivot_table(index=["backend", "payload_blocks", "group", "stitch_min"],
                         columns="series", values="ns", observed=True).reset_index()
    if not {"tail=split", "tail=full"} <= set(wide.columns):
        return pd.DataFrame()
    wide = wide[(wide["payload_blocks"] >= wide["stitch_min"])
                & (wide["payload_blocks"] % wide["group"] != 0)]
    return wide.assign(change=wide["tail=full"] / wide["tail=split"] - 1)


# -- plots -----------------------------------------------------------------------------------


def _boundaries(ax: Any, group: int, smin: int, bmax: int) -> None:
    for x in range(smin, bmax + 1, group):
        ax.axvline(x, color="0.55" if x == smin else "0.8", lw=0.9, ls="--", zorder=0)


def plot_steps(df: pd.DataFrame, include_openssl: bool = True):
    """ns against payload blocks per backend (columns), in place and from two pieces (rows):
    tail=split, tail=full and OpenSSL; dashed verticals at the group boundaries (the darker
    one where the stitched loop starts)."""
    b = best(df)
    b = b[b["op"].isin(["seal", "gather"] + (["openssl", "openssl_copy"] if include_openssl
                                              else []))]
    if b.empty:
        return empty_figure("nothing was measured", "Seal time against block count")
    order = list(dict.fromkeys(b["backend"]))
    g = sns.relplot(data=b, x="payload_blocks", y="ns", hue="series", palette=PALETTE,
                    col="backend", col_order=order, row="shape_label",
                    row_order=["in place", "out of place (+1)"], kind="line", lw=1.4,
                    height=3.0, aspect=1.15, facet_kws={"sharey": False, "sharex": True})
    for (_shape, be), ax in g.axes_dict.items():
        rows = b[(b["backend"] == be) & b["group"].notna()]
        if len(rows):
            _boundaries(ax, int(rows["group"].iloc[0]), int(rows["stitch_min"].iloc[0]),
                        int(b["payload_blocks"].max()))
        ax.set_ylim(bottom=0)
    g.set_titles("{col_name} — {row_name}")
    g.set_axis_labels("blocks (n / 16)", "ns per call (best of k)")
    g.figure.suptitle("Seal time against block count: tail=split vs tail=full vs OpenSSL "
                      "(dashed verticals: group boundaries)", y=1.02)
    return g


def plot_increments(df: pd.DataFrame):
    """The time each extra block adds, in place, per backend (spikes at group boundaries)."""
    inc = increments(df)
    inc = inc[inc["op"] == "seal"].dropna(subset=["delta_ns"]) if len(inc) else inc
    if inc.empty:
        return empty_figure("no consecutive block counts were measured",
                            "Marginal cost of one more block")
    order = list(dict.fromkeys(inc["backend"]))
    g = sns.relplot(data=inc, x="payload_blocks", y="delta_ns", hue="series", palette=PALETTE,
                    col="backend",
                    col_order=order, col_wrap=min(3, len(order)) or 1, kind="line", marker="o",
                    markersize=3, height=3.2, aspect=1.35, facet_kws={"sharey": False})
    for be, ax in g.axes_dict.items():
        rows = inc[inc["backend"] == be]
        if len(rows):
            _boundaries(ax, int(rows["group"].iloc[0]), int(rows["stitch_min"].iloc[0]),
                        int(inc["payload_blocks"].max()))
        ax.axhline(0, color="0.3", lw=0.8)
    g.set_axis_labels("blocks (n / 16)", "ns added by the last block")
    g.figure.suptitle("Marginal cost of one more block, in place", y=1.02)
    return g


# -- prose -----------------------------------------------------------------------------------


def headline(df: pd.DataFrame, n: int = 384) -> dict[str, Any]:
    """{"backends": {backend: {split_384, full_384, change_384}}} (in place, best of runs)."""
    b = best(df)
    b = b[(b["impl"] == "vgkernels") & (b["op"] == "seal") & (b["n"] == n)]
    out: dict[str, dict[str, Any]] = {}
    for be, g in b.groupby("backend", observed=True):
        s = g.loc[g["series"] == "tail=split", "ns"]
        f = g.loc[g["series"] == "tail=full", "ns"]
        if len(s) and len(f):
            out[str(be)] = {"split_384": float(s.min()), "full_384": float(f.min()),
                            "change_384": float(f.min() / s.min() - 1)}
    return {"backends": out}


def recommendation(df: pd.DataFrame, tol: float = 0.02) -> str:
    """Which tail strategy to build per backend, from the in-place change at 384 B and the
    median change over the block counts with leftover blocks (both must agree beyond
    ``tol`` for a verdict)."""
    head = headline(df)["backends"]
    left = leftover_compare(df)
    full, split, even = [], [], []
    for be, h in head.items():
        lb = left[left["backend"] == be] if len(left) else left
        med = float(lb["change"].median()) if len(lb) else h["change_384"]
        if h["change_384"] < -tol and med < 0:
            full.append(be)
        elif h["change_384"] > tol and med > 0:
            split.append(be)
        else:
            even.append(be)
    if not head:
        return "none: no backend was measured with both tails."
    parts = []
    if full:
        parts.append(f"use `tail=full` on {fmt_list(full)} (faster at 384 B and over the "
                     "leftover block counts)")
    if split:
        parts.append(f"keep `tail=split` on {fmt_list(split)} (`tail=full` is slower)")
    if even:
        parts.append(f"either tail on {fmt_list(even)} (within {tol:.0%} at 384 B, or the "
                     "two measures disagree)")
    return "; ".join(parts) + "."


def conclusions(df: pd.DataFrame, slope_df: pd.DataFrame) -> list[str]:
    """Per backend, computed statements: split against full at 384 B, over the leftover block
    counts, and the per-block slopes."""
    lines = []
    b = best(df)
    head = headline(df)["backends"]
    left = leftover_compare(df)
    for be in dict.fromkeys(b["backend"]):
        parts = []
        h = head.get(be)
        if h:
            o = b[(b["backend"] == be) & (b["op"] == "openssl") & (b["n"] == 384)]["ns"]
            vs = (f"; OpenSSL masked to the same features takes {fmt_ns(o.min())}"
                  if len(o) else "")
            parts.append(f"at 384 B in place, `tail=full` takes {fmt_ns(h['full_384'])} against "
                         f"{fmt_ns(h['split_384'])} with `tail=split` "
                         f"({fmt_pct(h['change_384'])}){vs}")
        lb = left[left["backend"] == be] if len(left) else left
        if len(lb):
            faster = lb[lb["change"] < -0.02]
            slower = lb[lb["change"] > 0.02]
            parts.append(f"over the {len(lb)} block counts with leftover blocks "
                         f"(b ≥ {int(lb['stitch_min'].iloc[0])}, b % "
                         f"{int(lb['group'].iloc[0])} ≠ 0) full is faster by more than 2% at "
                         f"{len(faster)}, slower by more than 2% at {len(slower)} "
                         f"(median change {fmt_pct(float(lb['change'].median()))})"
                         + (f"; slower at b = {fmt_list(slower['payload_blocks'].tolist())}"
                            if len(slower) else ""))
        sl = slope_df[(slope_df["backend"] == be) & (slope_df["op"] == "seal")] \
            if len(slope_df) else slope_df
        for r in sl.itertuples():
            if np.isfinite(r.per_block_ns):
                parts.append(f"`tail={r.tail}` in place: {r.per_block_ns:.1f} ns per block "
                             f"from {r.stitch_min} blocks on (R² {r.r2:.3f}); the block that "
                             f"completes a group of {r.group} changes the time by "
                             f"{r.boundary_step_ns:+.1f} ns, any other by "
                             f"{r.other_step_ns:+.1f} ns (median)")
        if parts:
            lines.append(f"**{be}**: " + "; ".join(parts) + ".")
    return lines
