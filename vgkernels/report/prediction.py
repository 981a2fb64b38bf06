"""Notebook 07_predict: llvm-mca's predictions per CPU, the winners, the host's measured row
beside its prediction, and the per-CPU recommendation table."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd
import seaborn as sns

from ..backends import get
from ..predict import mca
from ..predict.targets import CPUS
from ..predict.validate import worst
from .session import Profile


def cpus(profile: Profile, requested: Sequence[str] | None = None) -> list[str]:
    """The CPUs to predict: those requested, else two Zen models (tiny) or every target."""
    if requested:
        return list(requested)
    return ["znver3", "znver4"] if profile.tiny else list(CPUS)


def backends(profile: Profile, host_backends: Sequence[str]) -> list[str] | None:
    """Backends to predict: tiny only the host's (one compile per CPU), else every one."""
    return list(host_backends) if profile.tiny else None


def variants(profile: Profile) -> str:
    """Which variants to predict: tiny only the defaults (seconds), else the sweep."""
    return "default" if profile.tiny else "sweep"


def sweep_cpus(profile: Profile, host_cpu: str, targets: Sequence[str]) -> list[str] | None:
    """The CPUs whose variants are swept: every one (full), else only the host's, or the
    first predicted when the host is not among them (quick: a case is a whole compile,
    seconds each; the other CPUs get their defaults)."""
    if profile.full or not targets:
        return None
    return [host_cpu if host_cpu in targets else targets[0]]


def host_sweep(profile: Profile) -> bool:
    """Measure every swept variant on the host (full) or only the defaults."""
    return profile.full


def stitch_pivot(df: pd.DataFrame, region: str = "stitch") -> pd.DataFrame:
    """cycles/byte, rows CPU x backend, columns the variants."""
    d = df[df["region"] == region]
    return d.pivot_table(index=["cpu", "backend"], columns="variant", values="cycles_per_byte",
                         sort=False).round(3)


def winners(df: pd.DataFrame) -> pd.DataFrame:
    """Per CPU and backend: the fastest variant at 16 KiB, its gain over the default, its
    leftover-loop rate, and what bounds it."""
    st = df[df["region"] == "stitch"]
    lo = df[df["region"] == "leftover"].set_index(["cpu", "backend", "variant"])[
        "cycles_per_byte"]
    rows = []
    for (cpu, be), g in st.groupby(["cpu", "backend"], sort=False):
        g = g.assign(_d=(g["variant"] != "default").astype(int))
        best = g.sort_values(["cycles_per_byte", "_d"], kind="stable").iloc[0]
        dflt = g[g["variant"] == "default"]["cycles_per_byte"]
        d0 = float(dflt.iloc[0]) if len(dflt) else float("nan")
        rows.append({"cpu": cpu, "backend": be, "best variant": best["variant"],
                     "variants": int(g["variant"].nunique()),
                     "cycles/B @16 KiB": round(float(best["cycles_per_byte"]), 3),
                     "default cycles/B": round(d0, 3),
                     "gain over default": round(1 - float(best["cycles_per_byte"]) / d0, 3),
                     "leftover cycles/B": round(float(lo.get((cpu, be, best["variant"]),
                                                             float("nan"))), 3),
                     "bottleneck": best["bottleneck"], "busiest users": best["busiest_users"]})
    return pd.DataFrame(rows)


def best_per_cpu(win: pd.DataFrame) -> pd.DataFrame:
    """Per CPU, the winners' row with the fewest predicted cycles per byte at 16 KiB."""
    if win.empty:  # nothing predicted (no llvm-mca): the conclusions say so
        return win
    return win.loc[win.groupby("cpu", sort=False)["cycles/B @16 KiB"].idxmin()].reset_index(
        drop=True)


def plot(df: pd.DataFrame):
    """Predicted cycles per byte of the stitched loop: per CPU, backends by variant."""
    d = df[df["region"] == "stitch"]
    g = sns.catplot(d, kind="bar", x="backend", y="cycles_per_byte", hue="variant",
                    col="cpu", col_wrap=min(3, d["cpu"].nunique()), height=3.4, aspect=1.3,
                    sharey=False)
    g.set_axis_labels("", "predicted cycles / byte (stitched loop)")
    for ax in g.axes.flat:
        ax.tick_params(axis="x", rotation=30)
    return g


def plot_host(v: pd.DataFrame):
    """Measured against predicted cycles per byte on this host, per backend and loop."""
    g = sns.relplot(v, x="predicted_cycles_per_byte", y="measured_cycles_per_byte",
                    hue="backend", style="region", s=70, height=4.5, aspect=1.2)
    hi = float(max(v["predicted_cycles_per_byte"].max(), v["measured_cycles_per_byte"].max()))
    ax = g.ax
    ax.plot([0, hi * 1.1], [0, hi * 1.1], color="grey", lw=1, ls="--")
    ax.set_xlabel("predicted cycles / byte (llvm-mca)")
    ax.set_ylabel("measured cycles / byte (8 -> 16 KiB slope)")
    return g


def region_ratios(v: pd.DataFrame) -> pd.DataFrame:
    """Measured / predicted per backend and region (median over the variants, and range)."""
    return (v.groupby(["backend", "region"], sort=False)["ratio"]
            .agg(["median", "min", "max", "count"]).round(3).reset_index())


def shared_pipes(cpus_: Sequence[str]) -> pd.DataFrame:
    """Per CPU model: the resources llvm-mca gives vaesenc and vpclmulqdq at each width,
    and the ones both use (the question: does the model know they compete?)."""
    regs = {"xmm": "%xmm", "ymm": "%ymm", "zmm": "%zmm"}
    rows = []
    for cpu in cpus_:
        for w, r in regs.items():
            use: dict[str, set[str]] = {}
            timing: dict[str, str] = {}
            for ins in (f"vaesenc {r}1, {r}2, {r}3", f"vpclmulqdq $0, {r}1, {r}2, {r}3"):
                try:
                    a = mca.analyse(ins + "\n", cpu, iterations=10)
                except RuntimeError:
                    continue  # no scheduling info for that width on this CPU
                use[ins.split()[0]] = {n for n, p in a.pressure.items() if p > 0}
                timing[ins.split()[0]] = f"lat {a.latency[0]}, rthr {a.rthroughput[0]:g}"
            if len(use) == 2:
                both = use["vaesenc"] & use["vpclmulqdq"]
                rows.append({"cpu": cpu, "width": w, "vaesenc": ", ".join(sorted(use["vaesenc"])),
                             "vpclmulqdq": ", ".join(sorted(use["vpclmulqdq"])),
                             "shared": ", ".join(sorted(both)) or "none",
                             "vaesenc timing": timing["vaesenc"],
                             "vpclmulqdq timing": timing["vpclmulqdq"],
                             "scheduling model": a.model_name})
    return pd.DataFrame(rows)


def split_portable(rows: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(the x86 backends' rows, portable's): portable's measured / predicted ratio is far off
    (its table-free AES runs much slower than llvm-mca predicts), and in one range with the
    others it hides theirs."""
    if rows.empty:
        return rows, rows
    port = rows["backend"].map(lambda b: get(b).prims == "portable").astype(bool)
    return rows[~port], rows[port]


def headline(v: pd.DataFrame, win: pd.DataFrame) -> dict[str, Any]:
    """The notes' headline: the best backend and variant per CPU, the host's worst ratio
    among the x86 backends."""
    out: dict[str, Any] = {"best_per_cpu": {r["cpu"]: f"{r['backend']} {r['best variant']}"
                                            for _, r in best_per_cpu(win).iterrows()}}
    st, _ = split_portable(v[v["region"] == "stitch"] if not v.empty else v)
    if not st.empty:
        w = worst(st)
        out["worst_ratio"] = {"backend": w["backend"], "variant": w["variant"],
                              "ratio": round(float(w["ratio"]), 3)}
    return out


def conclusions(v: pd.DataFrame, win: pd.DataFrame, pipes: pd.DataFrame,
                host_cpu: str) -> list[str]:
    """Computed statements: what to build here, the winner per CPU, measured against
    predicted on the host, and what each model says about the zmm AES and multiply pipes."""
    out = []
    best = best_per_cpu(win)
    here = best[best["cpu"] == host_cpu] if not best.empty else best
    if len(here):
        r = here.iloc[0]
        out.append(f"**Recommendation:** on this host ({host_cpu}) build `{r['backend']}` with "
                   f"`{r['best variant']}` (llvm-mca: {r['cycles/B @16 KiB']:.3f} cycles/B at "
                   "16 KiB); check it with the driver before adopting it, since the model is "
                   "optimistic for zmm AES (see below).")
    elif len(best):
        r = best.iloc[0]
        out.append(f"**Recommendation:** llvm-mca predicts `{r['backend']}` with "
                   f"`{r['best variant']}` fastest on {r['cpu']}; this host ({host_cpu}) was "
                   "not among the CPUs predicted.")
    else:
        out.append("**Recommendation:** none: nothing was predicted (is llvm-mca installed?).")
    for _, r in best.iterrows():
        only = (" (only the defaults were predicted for this CPU: `--profile full` sweeps the "
                "variants on every CPU)" if r.get("variants", 2) == 1 else "")
        out.append(f"**{r['cpu']}**: fastest predicted is `{r['backend']}` with "
                   f"`{r['best variant']}` at {r['cycles/B @16 KiB']:.3f} cycles/B "
                   f"(bound: {r['bottleneck']}; busiest port used by {r['busiest users']})"
                   f"{only}.")
    st = v[v["region"] == "stitch"] if not v.empty else v
    x86, port = split_portable(st)
    if not x86.empty:
        w = worst(x86)
        out.append(f"On the host ({host_cpu}), seal measured / stitched loop predicted on the "
                   f"x86 backends: {x86['ratio'].min():.2f}-{x86['ratio'].max():.2f}; worst "
                   f"`{w['backend']}` `{w['variant']}` at {w['ratio']:.2f} (a shared machine: "
                   "noisy timings).")
    if not port.empty:
        out.append(f"`portable`'s seal measured / stitched loop predicted: "
                   f"{port['ratio'].min():.2f}-{port['ratio'].max():.2f}, apart from the "
                   "others: its table-free AES runs far slower than llvm-mca predicts, so its "
                   "figure says nothing about the x86 backends'.")
    if not v.empty:
        for _, r in region_ratios(v).iterrows():
            if r["region"] != "stitch":
                out.append(f"`{r['backend']}` {r['region']} loop alone: measured / predicted "
                           f"{r['median']:.2f} (range {r['min']:.2f}-{r['max']:.2f}).")
    if not pipes.empty:
        for _, r in pipes[pipes["width"] == "zmm"].iterrows():
            out.append(f"{r['cpu']} (model {r['scheduling model']}), zmm: vaesenc "
                       f"{r['vaesenc timing']} on {r['vaesenc']}; vpclmulqdq "
                       f"{r['vpclmulqdq timing']} on {r['vpclmulqdq']}; shared: {r['shared']}.")
    return out


__all__ = ["backends", "best_per_cpu", "conclusions", "cpus", "headline", "host_sweep", "plot",
           "plot_host", "region_ratios", "shared_pipes", "split_portable", "stitch_pivot",
           "sweep_cpus", "variants", "winners"]
