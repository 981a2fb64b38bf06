"""Results as tidy DataFrames, and on disk as Parquet + CSV under ``<data>/<host>/``.

Summary frame (one row per case and run): metadata, the case's labels (see
vgkernels.bench.cases), and ``k``, ``batch``, ``min_ticks``, ``median_ticks``, ``min_ns``,
``median_ns``, ``spread`` (relative interquartile range of the k samples),
``ticks_per_byte`` (min_ticks / bytes), ``overhead_ticks`` / ``overhead_ns`` (the driver's
empty-call cost, measured in the same chunk; not subtracted).

Samples frame (one row per sample; what vgkernels.analysis consumes): run_id, run, impl,
backend, variant, op, shape, pieces, aligned, n, bytes, blocks, batch, sample, ticks, ns
(ticks and ns per operation).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from .driver import summarise

LABEL_COLS = ["impl", "backend", "variant", "tail", "group", "stitch_min", "op", "shape",
              "pieces", "aligned", "n", "bytes", "blocks", "key_bytes", "aad_bytes"]
RUN_COLS = ["run_id", "sweep", "run", "timestamp"]
HOST_COLS = ["host", "cpu_model", "cpu_flags", "llvm_cpu", "kernel_version", "llvmlite_version",
             "llvm_version", "openssl_version", "cryptography_openssl", "python_version"]
STAT_COLS = ["k", "batch", "min_ticks", "median_ticks", "min_ns", "median_ns", "spread",
             "ticks_per_byte", "overhead_ticks", "overhead_ns"]
PROC_COLS = ["tsc_hz", "pinned_cpu", "ia32cap", "ia32cap_effective", "openssl_path"]
SUMMARY_COLS = RUN_COLS + LABEL_COLS + STAT_COLS + HOST_COLS + PROC_COLS
SAMPLE_COLS = ["run_id", "run", "impl", "backend", "variant", "op", "shape", "pieces", "aligned",
               "n", "bytes", "blocks", "batch", "sample", "ticks", "ns"]
_INT_COLS = ["group", "stitch_min", "run", "n", "bytes", "blocks", "key_bytes", "aad_bytes", "k",
             "batch", "pinned_cpu", "sample"]


def chunk_rows(event: dict[str, Any], common: dict[str, Any], proc: dict[str, Any]
               ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Summary and sample rows of one chunk event."""
    tsc_hz = float(proc["tsc_hz"])
    scale = 1e9 / tsc_hz
    ov = event.get("overhead")
    ov_ticks = min(ov["ticks"]) if ov else None
    base = {**common, "run": event["run"], "timestamp": event["timestamp"],
            **{c: proc.get(c) for c in PROC_COLS}}
    summary, samples = [], []
    for r in event["results"]:
        lab, ticks = r["label"], r["ticks"]
        st = summarise(ticks, tsc_hz)
        summary.append({**base, **lab, "k": len(ticks), "batch": r["batch"], **st,
                        "ticks_per_byte": st["min_ticks"] / lab["bytes"] if lab["bytes"] else None,
                        "overhead_ticks": ov_ticks,
                        "overhead_ns": ov_ticks * scale if ov_ticks is not None else None})
        for i, t in enumerate(ticks):
            samples.append({"run_id": common["run_id"], "run": event["run"],
                            **{c: lab[c] for c in SAMPLE_COLS if c in lab}, "batch": r["batch"],
                            "sample": i, "ticks": t, "ns": t * scale})
    return summary, samples


def frame(rows: list[dict[str, Any]], columns: list[str]) -> pd.DataFrame:
    """A DataFrame with the given column order (missing columns as NA) and nullable ints."""
    df = pd.DataFrame(rows, columns=columns)
    for c in _INT_COLS:
        if c in df.columns:
            df[c] = df[c].astype("Int64")
    if "aligned" in df.columns:
        df["aligned"] = df["aligned"].astype("boolean")
    return df


def save(summary: pd.DataFrame, samples: pd.DataFrame | None, meta: dict[str, Any],
         directory: Path, stem: str) -> dict[str, Path]:
    """Write ``stem``.parquet/.csv, ``stem``-samples.parquet/.csv and ``stem``-meta.json."""
    directory.mkdir(parents=True, exist_ok=True)
    paths = {"parquet": directory / f"{stem}.parquet", "csv": directory / f"{stem}.csv",
             "meta": directory / f"{stem}-meta.json"}
    summary.to_parquet(paths["parquet"], index=False)
    summary.to_csv(paths["csv"], index=False)
    if samples is not None:
        paths["samples_parquet"] = directory / f"{stem}-samples.parquet"
        paths["samples_csv"] = directory / f"{stem}-samples.csv"
        samples.to_parquet(paths["samples_parquet"], index=False)
        samples.to_csv(paths["samples_csv"], index=False)
    paths["meta"].write_text(json.dumps(meta, indent=2, default=str) + "\n")
    return paths


def load(path: str | Path) -> pd.DataFrame:
    """Read a results file written by :func:`save` (Parquet or CSV)."""
    p = Path(path)
    return pd.read_parquet(p) if p.suffix == ".parquet" else pd.read_csv(p)
