"""09_across_hosts: the same backend on different CPUs.  One quick run's seal rows per machine
are kept under ``data/hosts/<run>/seal.csv`` (committed: a few KiB each), merged here with this
report's own rows into one table and one figure.

`save_host` extracts a report's rows into data/hosts/ (notebook 09 does it with
``-p keep_host_data=true``; or call it on any report folder)."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pandas as pd
import seaborn as sns

from ..bench.store import DataSchemaError, load_folder
from .session import empty_figure, project_root

IDENTITY = ["host", "cpu_model", "cpu_vendor", "cpu_family", "cpu_model_number", "llvm_cpu",
            "hypervisor"]
REQUIRED = ["run", "backend", "bytes", "min_ns", *IDENTITY]


def default_root() -> Path | None:
    """data/hosts/ of the checkout this package runs from (None for an installed wheel)."""
    root = project_root(Path(__file__).resolve().parent)
    return root / "data" / "hosts" if root else None


def extract(summary: pd.DataFrame, run: str) -> pd.DataFrame:
    """vgkernels' in-place seal rows, one per backend and size: best of the runs' minima,
    median of their medians, worst spread, with the machine's identity."""
    s = summary[(summary["impl"] == "vgkernels") & (summary["op"] == "seal")]
    if "shape" in s.columns:
        s = s[s["shape"] == "one"]
    if s.empty:
        return pd.DataFrame(columns=REQUIRED)
    ident = [c for c in IDENTITY if c in s.columns]
    g = s.groupby(["backend", "bytes"], observed=True)
    out = g.agg(min_ns=("min_ns", "min"), median_ns=("median_ns", "median"),
                spread=("spread", "max")).reset_index()
    for c in ident:
        out[c] = g[c].first().values
    if "core_ghz" in s.columns:
        out["core_ghz"] = g["core_ghz"].median().values
    out["run"] = run
    out["note"] = ""
    return out


def save_host(report_dir: str | Path, root: str | Path | None = None) -> Path:
    """Write ``<root>/<report folder name>/seal.csv`` from a report's data; returns its path."""
    report_dir = Path(report_dir)
    summary, _ = load_folder(report_dir / "data")
    df = extract(summary, report_dir.name)
    if df.empty:
        raise ValueError(f"{report_dir}: no vgkernels seal rows (did notebook 06 run?)")
    dest = Path(root) if root is not None else default_root()
    if dest is None:
        raise ValueError("no data/hosts folder: not in a checkout; pass root")
    path = dest / report_dir.name / "seal.csv"
    path.parent.mkdir(parents=True, exist_ok=True)
    df.to_csv(path, index=False)
    first = {k: df[k].iloc[0] for k in IDENTITY if k in df.columns}
    (path.parent / "machine.json").write_text(json.dumps(
        {k: v.item() if hasattr(v, "item") else v for k, v in first.items()}, indent=2,
        default=str) + "\n")
    return path


def load_hosts(root: str | Path | None) -> pd.DataFrame:
    """Every ``<root>/*/seal.csv``; a file without the columns is skipped with a warning that
    names it."""
    frames = []
    if root is not None and Path(root).is_dir():
        for f in sorted(Path(root).glob("*/seal.csv")):
            try:
                df = pd.read_csv(f)
            except (OSError, ValueError) as exc:
                warnings.warn(f"{f}: unreadable ({exc}); skipped", RuntimeWarning, stacklevel=2)
                continue
            missing = [c for c in REQUIRED if c not in df.columns]
            if missing:
                warnings.warn(f"{f}: no column(s) {', '.join(missing)}; skipped",
                              RuntimeWarning, stacklevel=2)
                continue
            frames.append(df)
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=REQUIRED)


def this_run(data_dir: str | Path, run: str) -> pd.DataFrame:
    """This report's own rows (empty when it measured no seal)."""
    try:
        summary, _ = load_folder(data_dir)
    except (DataSchemaError, FileNotFoundError):
        return pd.DataFrame(columns=REQUIRED)
    return extract(summary, run)


def merged(hosts: pd.DataFrame, current: pd.DataFrame) -> pd.DataFrame:
    """All rows, one machine label each: CPU, family/model, LLVM name, run."""
    df = pd.concat([x for x in (hosts, current) if len(x)], ignore_index=True) \
        if len(hosts) or len(current) else pd.DataFrame(columns=REQUIRED)
    if df.empty:
        return df.assign(machine=pd.Series(dtype=str), gbps=pd.Series(dtype=float))
    df = df.drop_duplicates(["run", "backend", "bytes"], keep="last")

    def label(r: pd.Series) -> str:
        fam = "?" if pd.isna(r["cpu_family"]) else int(r["cpu_family"])
        mod = "?" if pd.isna(r["cpu_model_number"]) else int(r["cpu_model_number"])
        note = r.get("note")
        what = note if isinstance(note, str) and note else str(r["cpu_model"])
        return f"{what} · family {fam} model {mod} · {r['llvm_cpu']} · {r['run']}"

    df["machine"] = df.apply(label, axis=1)
    df["gbps"] = df["bytes"] / df["min_ns"]
    return df


def table(df: pd.DataFrame) -> pd.DataFrame:
    """backend x size rows, one column of ns (best of k) per machine."""
    if df.empty:
        return pd.DataFrame()
    t = df.pivot_table(index=["backend", "bytes"], columns="machine", values="min_ns",
                       aggfunc="min")
    return t.reset_index()


def plot(df: pd.DataFrame):
    """Seal GB/s against bytes, one line per machine, one panel per backend."""
    if df.empty:
        return empty_figure("no seal rows from any machine")
    g = sns.relplot(data=df, x="bytes", y="gbps", hue="machine", col="backend", col_wrap=3,
                    kind="line", marker="o", height=2.8, aspect=1.3,
                    facet_kws={"sharey": False})
    g.set(xscale="log")
    g.set_axis_labels("bytes", "seal GB/s (best of k)")
    sns.move_legend(g, "upper center", bbox_to_anchor=(0.5, 0.0), ncol=1, title=None)
    return g


def conclusions(df: pd.DataFrame) -> list[str]:
    """The machines compared and, per backend, how far apart they are at the largest size."""
    if df.empty:
        return ["No machine's data: run `vgkernels report` (notebook 06 measures the seal) and "
                "keep it with `-p keep_host_data=true`."]
    machines = df["machine"].unique()
    lines = [f"{len(machines)} machine(s): " + "; ".join(sorted(machines)) + "."]
    if len(machines) < 2:
        lines.append("One machine only: commit a quick run from another CPU "
                     "(data/hosts/<run>/seal.csv) to compare.")
        return lines
    for be, g in df.groupby("backend", observed=True):
        top = g[g["bytes"] == g["bytes"].max()]
        if top["machine"].nunique() < 2:
            continue
        best, worst = top.loc[top["min_ns"].idxmin()], top.loc[top["min_ns"].idxmax()]
        lines.append(f"`{be}` at {int(best['bytes'])} B: fastest on {best['machine']} "
                     f"({best['gbps']:.2f} GB/s), {worst['min_ns'] / best['min_ns']:.2f}x "
                     f"slower on {worst['machine']}.")
    return lines


def recommendation(df: pd.DataFrame) -> str:
    """Which backend to use, and whether that holds on every machine measured (the fastest
    seal at the largest size each machine measured)."""
    if df.empty or df["machine"].nunique() < 2:
        return ("keep a quick run from another CPU (`-p keep_host_data=true`, then commit "
                "data/hosts/) before drawing conclusions across machines.")
    best = {}
    for m, g in df.groupby("machine", observed=True):
        top = g[g["bytes"] == g["bytes"].max()]
        best[m] = str(top.loc[top["min_ns"].idxmin(), "backend"])
    if len(set(best.values())) == 1:
        be = next(iter(best.values()))
        return f"use `{be}` everywhere: it is the fastest seal on all {len(best)} machines."
    return "pick the backend per machine: " + "; ".join(f"`{b}` on {m}"
                                                        for m, b in best.items()) + "."
