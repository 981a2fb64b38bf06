"""04_copy_below: the gather against copy + seal in place, from 16 B to 64 KiB, aligned and
unaligned piece boundaries, per backend; the derived copy_below thresholds with confidence
intervals, written as copy_below.json (a `vgkernels.dispatch` table for this CPU)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .. import dispatch, machine
from .session import Profile, empty_figure, fmt_bytes, fmt_list, get_profile

RTOL = 0.01  # gather "at least as fast" as copy+ip: within 1%
STAT = "median"  # per-size statistic the thresholds compare (the bootstrap needs a median)


def sizes(profile: str | Profile) -> list[int] | None:
    """Aligned sizes (each also measured one byte shorter: the unaligned twin); None: the
    sweep's own coarse grid, 16 B .. 64 KiB."""
    prof = get_profile(profile)
    return prof.pick([16, 256, 1024, 4096],
                     [16, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536],
                     None)


def refine(profile: str | Profile) -> bool:
    """Whether the sweep adds dense sizes where gather and copy+ip cross."""
    return not get_profile(profile).tiny


def thresholds(samples: pd.DataFrame, n_boot: int, rtol: float = RTOL, stat: str = STAT,
               seed: int = 0) -> dict[tuple[str, bool], Any]:
    """``vgkernels.analysis.copy_below`` per (backend, aligned), skipping backends whose rows
    cannot give a crossover (e.g. a sweep error left one operation without samples)."""
    from ..analysis import copy_below

    out: dict[tuple[str, bool], Any] = {}
    s = samples[samples["op"].isin(["gather", "copy_ip"])]
    for _be, g in s.groupby("backend", observed=True, sort=False):
        try:
            out.update(copy_below(g, rtol=rtol, stat=stat, n_boot=n_boot, seed=seed))
        except ValueError:
            continue
    return out


def threshold_table(results: Mapping[tuple[str, bool], Any]) -> pd.DataFrame:
    """One row per backend and alignment: threshold, its confidence interval and notes."""
    rows = [{"backend": be, "aligned": al, "threshold": r.threshold, "ci_low": r.ci_low,
             "ci_high": r.ci_high, "ci_level": r.ci_level, "n_boot": r.n_boot,
             "p_none": r.p_none, "non_monotonic": r.non_monotonic, "note": r.note}
            for (be, al), r in results.items()]
    df = pd.DataFrame(rows)
    for c in ("threshold", "ci_low", "ci_high"):
        if c in df.columns:
            df[c] = df[c].astype("Int64")
    return df


def document(results: Mapping[tuple[str, bool], Any], samples: pd.DataFrame,
             meta: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """This machine's copy_below table (`vgkernels.dispatch` owns the format): per backend
    ``{"aligned": int|null, "unaligned": int|null, "ci": {...}, "measured": {...}}``; null means
    the gather never caught up in the measured range."""
    meta = dict(meta or {})
    date = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    entries: dict[str, dispatch.Entry] = {}
    for be in sorted({b for b, _ in results}):
        if (be, True) not in results or (be, False) not in results:
            raise dispatch.TableError(f"{be}: a table row needs both alignments measured")
        s = samples[samples["backend"] == be]
        r = results[(be, True)]
        measured = {"sizes": [int(s["bytes"].min()), int(s["bytes"].max())] if len(s) else None,
                    "rule": r.rule, "stat": r.stat, "rtol": r.rtol}
        entries[be] = dispatch.Entry.from_crossover(r, results[(be, False)], measured)
    return dispatch.Table(machine.cpu_key(), machine.host_name(), date, entries,
                          meta.get("run_id")).dump()


def write(doc: Mapping[str, Any], path: Path) -> Path:
    """Write a copy_below document as JSON to ``path``; returns the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=2) + "\n")
    return path


def ratio_tables(samples: pd.DataFrame) -> pd.DataFrame:
    """The thread's table: per backend and alignment, n | copy+ip | gather | gather/copy+ip
    (best of k, ns).  ``n`` is the first piece; the text is n + 1 bytes."""
    from ..analysis import ratio_table

    s = samples[samples["op"].isin(["gather", "copy_ip"])]
    if s.empty:
        return pd.DataFrame()
    t = ratio_table(s.assign(payload=s["n"]), size_col="payload", by=["backend", "aligned"])
    t = t.dropna(subset=["copy+ip", "gather"], how="all")
    return t.sort_values(["backend", "n", "aligned"]).reset_index(drop=True)


def _thr_text(r: Any, top: int) -> str:
    if r.threshold is None:
        return f"at every measured size up to {fmt_bytes(top)} (the gather never catches up)"
    ci = ""
    if r.ci_low is not None or r.ci_high is not None:
        lo = "?" if r.ci_low is None else str(r.ci_low)
        hi = "none (no crossover)" if r.ci_high is None else str(r.ci_high)
        ci = f" ({r.ci_level:.0%} CI [{lo}, {hi}])"
    return f"below {r.threshold} B of text{ci}"


def _early(r: Any) -> str:
    sizes = sorted({s for v in r.early_wins.values() for s in v})
    return (f"the gather also wins at {len(sizes)} size{'s' if len(sizes) > 1 else ''} below "
            f"it ({fmt_list(sizes, 5)} B), ignored")


def statements(results: Mapping[tuple[str, bool], Any], samples: pd.DataFrame) -> list[str]:
    """Per backend, computed: is a copy dispatch needed at all, and where."""
    from ..backends import BY_NAME

    lines = []
    for be in dict.fromkeys(b for b, _ in results):
        a, u = results.get((be, True)), results.get((be, False))
        s = samples[samples["backend"] == be]
        lo, top = int(s["bytes"].min()), int(s["bytes"].max())
        rtol = (a or u).rtol
        default = BY_NAME[be].copy_below if be in BY_NAME else None
        if all(r is not None and r.threshold == 0 for r in (a, u)):
            txt = (f"**{be}: no copy dispatch is needed.** The gather is within {rtol:.0%} of "
                   f"copy + seal in place, or faster, at every measured size from {lo} B to "
                   f"{fmt_bytes(top)} ({a.stat} of the samples), whether or not the first "
                   "piece ends on a block boundary")
        else:
            parts = []
            for r, when in ((a, "when the first piece ends on a block boundary"),
                            (u, "when it does not")):
                if r is None:
                    parts.append(f"{when}, not measured")
                elif r.threshold == 0:
                    parts.append(f"{when}, never copy (the gather is as fast at every size)")
                elif r.threshold is None:
                    parts.append(f"{when}, always copy (the gather never catches up by "
                                 f"{fmt_bytes(top)})")
                else:
                    parts.append(f"{when}, copy {_thr_text(r, top)}")
            txt = f"**{be}: a copy dispatch pays off**: " + "; ".join(parts)
        for r, what in ((a, "aligned"), (u, "unaligned")):
            if r is not None and r.non_monotonic and r.threshold:
                txt += f" ({what}: {_early(r)})"
        if default is not None:
            da, du = (None if a is None else a.threshold), (None if u is None else u.threshold)
            txt += (f". The backend table's default is ({default[0]}, {default[1]}); the data "
                    f"say ({'none' if da is None else da}, {'none' if du is None else du})")
        lines.append(txt + ".")
    return lines


def recommendation(results: Mapping[tuple[str, bool], Any]) -> str:
    """The copy_below setting per backend: (aligned, unaligned) thresholds, 0 = never copy,
    "always" where the gather never catches up."""
    if not results:
        return "none: no crossover could be computed."

    def thr(r: Any) -> str:
        return "?" if r is None else "always" if r.threshold is None else str(r.threshold)

    bes = list(dict.fromkeys(b for b, _ in results))
    never = [be for be in bes if all(results.get((be, al)) is not None
                                     and results[(be, al)].threshold == 0
                                     for al in (True, False))]
    rest = [be for be in bes if be not in never]
    parts = []
    if never:
        parts.append(f"no copy dispatch on {fmt_list(never)} (`copy_below=(0, 0)`: the "
                     "gather is never slower)")
    if rest:
        parts.append("set `copy_below` (aligned, unaligned) to " + ", ".join(
            f"({thr(results.get((be, True)))}, {thr(results.get((be, False)))}) on `{be}`"
            for be in rest))
    return "; ".join(parts) + "."


def compact_table(samples: pd.DataFrame, sizes: list[int] | None = None) -> pd.DataFrame:
    """gather / copy+ip (best of k) with one row per first-piece size n and one column per
    backend and alignment: the per-backend thread tables on one screen.  ``sizes``: the aligned
    sizes to keep (each with its unaligned twin n - 1, shown on the same row); default all
    measured, the refined ones included."""
    t = ratio_tables(samples)
    if t.empty:
        return t
    t = t.assign(size=np.where(t["aligned"], t["n"], t["n"] + 1).astype(int),
                 piece=np.where(t["aligned"], "aligned", "unaligned"))
    if sizes is not None:
        t = t[t["size"].isin(list(sizes))]
    out = t.pivot_table(index="size", columns=["backend", "piece"], values="gather/copy+ip",
                        aggfunc="min", observed=True)
    out.index.name = "n (aligned; unaligned n − 1)"
    return out


def headline(results: Mapping[tuple[str, bool], Any]) -> dict[str, Any]:
    """The thresholds per backend, for the index's headline table."""
    out: dict[str, dict[str, Any]] = {}
    for (be, al), r in results.items():
        out.setdefault(be, {})["aligned" if al else "unaligned"] = r.threshold
    return {"backends": out}


RATIO_CAPTION = (
    "How to read the figure: each line is gather / copy+ip per size (the median of the "
    "samples; below 1 the gather is faster), green where the first piece ends on a block "
    "boundary (aligned), orange where it does not. The solid horizontal line is 1 (equal), "
    "the dashed one 1 + rtol (the tolerance within which the gather counts as as fast). A "
    "dotted vertical line marks a threshold (copy below it), and the shaded band of its "
    "colour its bootstrap confidence interval; no vertical line: the threshold is 0 or none.")


def plot_ratio(results: Mapping[tuple[str, bool], Any]):
    """gather / copy+ip (per-size statistic) against bytes per backend, aligned and not; the
    shaded bands are the thresholds' confidence intervals, the dashed line 1 + rtol."""
    import matplotlib.pyplot as plt

    bes = list(dict.fromkeys(b for b, _ in results))
    if not bes:
        return empty_figure("no crossover could be computed", "gather / copy+ip")
    cols = min(3, len(bes))
    rows = -(-len(bes) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(5.2 * cols, 3.6 * rows), squeeze=False)
    colors = {True: "#1b9e77", False: "#d95f02"}
    for ax, be in zip(axes.flat, bes, strict=False):
        for al in (True, False):
            r = results.get((be, al))
            if r is None:
                continue
            c = r.curve.sort_values("size")
            lab = "aligned" if al else "unaligned"
            ax.plot(c["size"], c["ratio"], marker="o", ms=3, lw=1.3, color=colors[al],
                    label=lab)
            if r.threshold:
                ax.axvline(r.threshold, color=colors[al], lw=1.0, ls=":")
                lo = r.ci_low if r.ci_low is not None else r.threshold
                hi = r.ci_high if r.ci_high is not None else c["size"].max()
                if hi > lo:
                    ax.axvspan(lo, hi, color=colors[al], alpha=0.12, lw=0)
            rtol = r.rtol
        ax.axhline(1.0, color="0.3", lw=0.8)
        ax.axhline(1.0 + rtol, color="0.5", lw=0.8, ls="--")
        ax.set_xscale("log", base=2)
        ax.set_title(be)
        ax.set_xlabel("bytes (n + 1, two pieces)")
        ax.set_ylabel(f"gather / copy+ip ({r.stat})")
        ax.legend(fontsize=8)
    for ax in list(axes.flat)[len(bes):]:
        ax.axis("off")
    fig.suptitle("Gather against copy + seal in place (below 1: gather faster)", y=1.01)
    fig.tight_layout()
    return fig


def summary_stats(results: Mapping[tuple[str, bool], Any]) -> pd.DataFrame:
    """Per backend and alignment: the ratio's range and where gather loses most."""
    rows = []
    for (be, al), r in results.items():
        c = r.curve
        worst = c.loc[c["ratio"].idxmax()]
        rows.append({"backend": be, "aligned": al, "sizes": len(c),
                     "ratio_min": float(c["ratio"].min()), "ratio_max": float(c["ratio"].max()),
                     "worst_size": int(worst["size"]),
                     "wins": int(np.sum(c["win"]))})
    return pd.DataFrame(rows)
