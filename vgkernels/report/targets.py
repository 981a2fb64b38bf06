"""Notebook 10 (targets): issue 12's targets table from one run of
``vgkernels.bench.targets.measure``, the placement heat map, the nonce-store cost, the
``vaesenc`` issue rate per width, target 1's bulk loop replayed on its own, and conclusions
computed from them."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns

from ..analysis import targets as at
from ..backends import Backend
from ..bench import targets as bt
from .session import Profile, fmt_range


def only(backends: str | Iterable[str] | None) -> Callable[[Backend], bool] | None:
    """`report.start`'s filter: when no backends are named, the issue's (``bt.BACKENDS``, the
    ones its targets are set for) rather than every usable one; named ones are kept as given.
    Without it the batch measured `portable` too, whose instruction-mix "bound" (it issues no
    AES or carry-less-multiply instruction) made the recommendation read 1e6x its limit."""
    if backends:
        return None
    return lambda b: b.name in bt.BACKENDS


def bench_profile(profile: Profile) -> bt.Profile:
    """The measurement profile of a report profile (quick stays under ~90 s)."""
    return bt.PROFILES[profile.name]


def measure(profile: Profile, backends: Sequence[str] | None = None) -> pd.DataFrame:
    """The raw rows (no worker sweeps at tiny: the smoke test needs only the machinery);
    ``backends`` None: the issue's, target 5 on every x86 backend (`bt.measure`)."""
    return bt.measure(backends, bench_profile(profile), sweeps=not profile.tiny)


def heat_plot(raw: pd.DataFrame):
    """Heat map of seal_out time over output offsets, relative to the fastest, per backend
    and size (a figure): the sweep's minima, before the paired confirmation the check uses."""
    h = at.heat(raw, "place_io")
    fig, ax = plt.subplots(figsize=(11, 0.5 + 0.45 * max(1, len(h))))
    if not h.empty:
        sns.heatmap(h, ax=ax, cmap="rocket_r", vmin=1.0, vmax=max(1.1, float(h.max().max())),
                    cbar_kws={"label": "x fastest placement"})
        ax.set_xlabel("output page offset from the input (bytes)")
        ax.set_ylabel("backend, size")
    return fig


def nonce_table(raw: pd.DataFrame) -> pd.DataFrame:
    """16 B seal ns per backend: plain, after an 8-byte and a 4-byte nonce store."""
    n = raw[raw.get("part") == "nonce"] if "part" in raw else raw.iloc[0:0]
    if n.empty:
        return pd.DataFrame()
    t = n.pivot_table(index="backend", columns="mode", values="min_ns", aggfunc="min")
    for m in ("store8", "store4"):
        if m in t and "none" in t:
            t[f"{m} - none"] = t[m] - t["none"]
    return t.reset_index()


def conclusions(tab: pd.DataFrame, raw: pd.DataFrame) -> list[str]:
    """Statements computed from the table: what holds, the worst misses, the AES rate."""
    out = []
    decided = tab.dropna(subset=["holds"])
    out.append(f"{int(decided['holds'].sum())} of {len(decided)} checks hold on this host "
               "(minimum of the samples; placement: the median paired ratio against the "
               "fastest offset).")
    for (target, check), g in decided.groupby(["target", "check"], sort=True):
        bad = g[~g["holds"].astype(bool)]
        if bad.empty:
            out.append(f"Target {target}, {check}: holds everywhere measured "
                       f"(worst ratio {g['ratio'].max():.3g}, limit {g['limit'].min():.3g}).")
        else:
            w = bad.loc[(bad["ratio"] / bad["limit"]).idxmax()]
            out.append(f"Target {target}, {check}: fails {len(bad)} of {len(g)}; worst "
                       f"{w['backend']} at {w['size']} B {w['detail']}: {w['measured']:.4g} "
                       f"{w['unit']} against {w['reference']:.4g} ({w['ratio']:.3g}x, limit "
                       f"{w['limit']:.3g}).")
    rate = at.aes_rate(raw)
    if len(rate):
        for w, g in rate.groupby("width"):
            best = g.loc[g["aes_per_cycle"].idxmax()]
            name = {1: "xmm", 2: "ymm", 4: "zmm"}[int(w)]
            out.append(f"`vaesenc` {name}: at most {best['aes_per_cycle']:.2f} per core cycle "
                       f"({int(best['chains'])} chains), {best['block_rounds_per_cycle']:.2f} "
                       "block-rounds per cycle.")
    out += floor_conclusions(tab)
    out += replay_conclusions(at.loop_budget(at.loop_replay(raw)))
    return out


def floor_conclusions(tab: pd.DataFrame) -> list[str]:
    """Target 3's 16-byte seal against its serial floor, back to back (the check) and one
    call at a time (context): the first is a throughput, the second a latency."""
    back = tab[tab["check"] == "16 B seal vs serial floor"]
    one = tab[tab["check"].str.startswith("16 B seal one call at a time")]
    if back.empty or one.empty:
        return []

    def span(g: pd.DataFrame) -> str:
        return fmt_range(g["ratio"].min(), g["ratio"].max(), unit="x")
    return [f"Target 3: back to back, a 16-byte seal takes {span(back)} its serial floor "
            "(successive calls overlap in the core, so that is a throughput); one call at a "
            f"time, an lfence after each, {span(one)} (its latency, less an empty call timed "
            "the same way)."]


def replay_conclusions(budget: pd.DataFrame) -> list[str]:
    """What the replayed loops say about target 1: how far the loop's own instructions are
    from its AES and multiplies, and how much other work the limit leaves room for."""
    out = []
    for _, r in budget.iterrows():
        s = (f"Target 1, `{r['backend']}`: its bulk loop replayed on its own runs at "
             f"{r['loop_vs_core']:.3g}x its AES rounds and multiplies alone")
        if not math.isnan(r["free_vs_core"]):
            s += f" ({r['free_vs_core']:.3g}x with nothing chaining through the rest"
            if not (math.isnan(r["cut_alu_vs_core"]) or math.isnan(r["cut_moves_vs_core"])):
                s += (f"; {r['cut_alu_vs_core']:.3g}x with only the chains through its "
                      f"computing instructions cut, {r['cut_moves_vs_core']:.3g}x with only "
                      "those through its loads, stores and moves")
            if not (math.isnan(r["alu_vs_core"]) or math.isnan(r["moves_vs_core"])):
                s += (f"; {r['alu_vs_core']:.3g}x with only its computing instructions, "
                      f"{r['moves_vs_core']:.3g}x with only its loads, stores and moves")
            s += ")"
        s += f"; it issues {int(r['others_total'])} other vector instructions per iteration"
        if not math.isnan(r["others_at_limit"]):
            s += (f", and a loop at {at.BULK_LIMIT:g}x has room for about "
                  f"{r['others_at_limit']:.0f}")
        out.append(s + ".")
    return out


def recommendation(tab: pd.DataFrame) -> str:
    """What to work on first: the check furthest over its limit (or: all hold)."""
    bad = at.failing(tab)
    if bad.empty:
        return "every measured target holds here: measure another CPU before closing the issue"
    w = bad.iloc[0]
    return (f"work first on target {w['target']} ({w['check']}): {w['backend']} at "
            f"{w['size']} B is {w['ratio'] / w['limit']:.2f}x its limit; "
            f"{len(bad)} check(s) fail in all")


__all__ = ["bench_profile", "conclusions", "heat_plot", "measure", "nonce_table", "only",
           "recommendation", "replay_conclusions"]
