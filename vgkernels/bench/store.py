"""Results as tidy DataFrames, and on disk as Parquet + CSV under ``<data>/<host>/``.

Summary frame (one row per case and run): metadata, the case's labels (see
vgkernels.bench.cases), and ``k`` (samples, over ``passes`` passes), ``batch`` (of the first
pass), ``min_ticks``, ``median_ticks``, ``min_ns``,
``median_ns``, ``spread`` (relative interquartile range of the k samples),
``median_lo_ns`` .. ``median_hi_ns`` (95% bootstrap interval of the median), ``noisy``
(spread above driver.NOISY_SPREAD), ``ticks_per_byte`` (min_ticks / bytes), ``gbps``
(bytes / min_ns), ``cycles_per_byte`` (core cycles per byte at the fastest sample, from the
chunk's core clock), ``overhead_ticks`` / ``overhead_ns`` (the driver's
empty-call cost, measured in the same chunk; not subtracted), ``core_ghz`` (the core clock
during the chunk, from a chain of dependent adds).

Samples frame (one row per sample; what vgkernels.analysis consumes): run_id, run, impl,
backend, variant (its text), tail, group, stitch_min, karatsuba, skew (its fields: see
vgkernels.variant), op, shape, pieces, aligned, n, bytes, blocks, pass, batch, sample, ticks,
ns (ticks and ns per operation).
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

import pandas as pd

from ..variant import FIELDS as VARIANT_FIELDS
from ..variant import columns_of_tag
from .driver import NOISY_SPREAD, summarise

LABEL_COLS = ["impl", "backend", "variant", *VARIANT_FIELDS, "op", "shape", "pieces", "aligned",
              "n", "bytes", "blocks", "key_bytes", "aad_bytes", "nonce_bytes"]
RUN_COLS = ["run_id", "sweep", "run", "timestamp"]
HOST_COLS = ["host", "cpu_model", "cpu_vendor", "cpu_family", "cpu_model_number",
             "cpu_stepping", "hypervisor", "os_kernel", "cpu_flags", "llvm_cpu",
             "kernel_version", "llvmlite_version", "llvm_version", "openssl_version",
             "cryptography_openssl", "python_version"]
STAT_COLS = ["k", "passes", "batch", "min_ticks", "median_ticks", "min_ns", "median_ns",
             "median_lo_ns", "median_hi_ns", "spread", "noisy", "ticks_per_byte", "gbps",
             "cycles_per_byte", "overhead_ticks", "overhead_ns", "core_ghz"]
PROC_COLS = ["tsc_hz", "pinned_cpu", "stack_offset", "ia32cap", "ia32cap_effective",
             "openssl_path", "bundled_openssl_version", "bundled_ia32cap_effective",
             "bundled_openssl_path", "aead_peers"]
SUMMARY_COLS = RUN_COLS + LABEL_COLS + STAT_COLS + HOST_COLS + PROC_COLS
SAMPLE_COLS = ["run_id", "run", "impl", "backend", "variant", *VARIANT_FIELDS, "op", "shape",
               "pieces", "aligned", "n", "bytes", "blocks", "pass", "batch", "sample", "ticks",
               "ns"]
_INT_COLS = ["run", "n", "bytes", "blocks", "key_bytes", "aad_bytes", "nonce_bytes", "k", "passes",
             "batch", "pinned_cpu", "stack_offset", "pass", "sample"]


def _case_row(base: dict[str, Any], lab: dict[str, Any], ticks: list[float], batch: int,
              ov_ticks: float | None, core_hz: float | None, passes: int, tsc_hz: float
              ) -> dict[str, Any]:
    st = summarise(ticks, tsc_hz)
    nbytes = lab["bytes"]
    return {**base, **lab, "k": len(ticks), "passes": passes, "batch": batch, **st,
            "noisy": bool(st["spread"] > NOISY_SPREAD),
            "ticks_per_byte": st["min_ticks"] / nbytes if nbytes else None,
            "gbps": nbytes / st["min_ns"] if nbytes and st["min_ns"] else None,
            # core cycles per byte: the fastest sample at the core clock the add chain saw
            "cycles_per_byte": (st["min_ns"] * core_hz / 1e9 / nbytes
                                if nbytes and core_hz else None),
            "overhead_ticks": ov_ticks,
            "overhead_ns": ov_ticks * 1e9 / tsc_hz if ov_ticks is not None else None,
            "core_ghz": core_hz / 1e9 if core_hz else None}


class Accumulator:
    """Collects chunk events (from every pass) into summary and sample rows.  A case's row
    summarises all its samples, whichever passes they came from."""

    def __init__(self, common: dict[str, Any], keep_samples: bool = True):
        self.common = common
        self.keep_samples = keep_samples
        self.samples: list[dict[str, Any]] = []
        self._cases: dict[tuple, dict[str, Any]] = {}

    def add(self, event: dict[str, Any], proc: dict[str, Any]) -> list[dict[str, Any]]:
        """Take one chunk event; returns that chunk's own summary rows (for callbacks)."""
        tsc_hz = float(proc["tsc_hz"])
        ov = event.get("overhead")
        ov_ticks = min(ov["ticks"]) if ov else None
        base = {**self.common, "run": event["run"], "timestamp": event["timestamp"],
                **{c: proc.get(c) for c in PROC_COLS}}
        rows = []
        for r in event["results"]:
            lab, ticks = r["label"], r["ticks"]
            rows.append(_case_row(base, lab, ticks, r["batch"], ov_ticks, event.get("core_hz"),
                                  1, tsc_hz))
            key = (event["run"], event["index"], tuple(sorted(lab.items())))
            acc = self._cases.setdefault(key, {"base": base, "label": lab, "ticks": [],
                                               "batch": r["batch"], "ov": [], "core": [],
                                               "passes": set(), "tsc_hz": tsc_hz})
            first = len(acc["ticks"])
            acc["ticks"].extend(ticks)
            acc["passes"].add(event["pass"])
            if ov_ticks is not None:
                acc["ov"].append(ov_ticks)
            if event.get("core_hz"):
                acc["core"].append(event["core_hz"])
            if self.keep_samples:
                for i, t in enumerate(ticks):
                    self.samples.append({
                        "run_id": self.common["run_id"], "run": event["run"],
                        **{c: lab[c] for c in SAMPLE_COLS if c in lab}, "pass": event["pass"],
                        "batch": r["batch"], "sample": first + i, "ticks": t,
                        "ns": t * 1e9 / tsc_hz})
        return rows

    def summary(self) -> list[dict[str, Any]]:
        """One summary row per case and run (min/median ns, spread) from the samples so far."""
        out = []
        for acc in self._cases.values():
            ov = min(acc["ov"]) if acc["ov"] else None
            core = statistics.median(acc["core"]) if acc["core"] else None
            out.append(_case_row(acc["base"], acc["label"], acc["ticks"], acc["batch"], ov, core,
                                 len(acc["passes"]), acc["tsc_hz"]))
        return out


def frame(rows: list[dict[str, Any]], columns: list[str]) -> pd.DataFrame:
    """A DataFrame with the given column order (missing columns as NA) and nullable ints."""
    df = pd.DataFrame(rows, columns=columns)
    for c in _INT_COLS:
        if c in df.columns:
            df[c] = df[c].astype("Int64")
    for c in ["aligned", *VARIANT_FIELDS]:  # variant parameters: nullable bool / int
        if c in df.columns:
            df[c] = _nullable(df[c])
    return df


def _nullable(col: pd.Series) -> pd.Series:
    """An object column of bools (ints) with gaps as nullable boolean (Int64)."""
    vals = col.dropna()
    if len(vals) and all(isinstance(v, bool) for v in vals):
        return col.astype("boolean")
    if len(vals) and all(isinstance(v, int) for v in vals):
        return col.astype("Int64")
    return col


DATA_SCHEMA = 4  # 4: sample rows carry the variant's fields as columns (tail, group, ...);
# 3: median bands, noisy, gbps, cycles_per_byte, EVP_AEAD peer rows;
# 2: rows carry the machine's identity (vgkernels.machine); 1: before


class DataSchemaError(ValueError):
    """A results file this version cannot read (the message names it)."""


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
    paths["meta"].write_text(json.dumps({**meta, "schema": DATA_SCHEMA}, indent=2, default=str)
                             + "\n")
    return paths


def load(path: str | Path) -> pd.DataFrame:
    """Read a results file written by :func:`save` (Parquet or CSV)."""
    p = Path(path)
    return pd.read_parquet(p) if p.suffix == ".parquet" else pd.read_csv(p)


def upgrade(df: pd.DataFrame, schema: int) -> pd.DataFrame:
    """Rows written under an older data schema in today's form: before 4, sample rows carried
    the variant only as text; its fields are decoded once here (`vgkernels.variant`)."""
    if schema >= 4 or "variant" not in df.columns or set(VARIANT_FIELDS) <= set(df.columns):
        return df
    impl = df["impl"] if "impl" in df.columns else pd.Series("vgkernels", index=df.index)
    rows = [columns_of_tag(t if i == "vgkernels" else None)
            for t, i in zip(df["variant"], impl, strict=True)]
    return df.assign(**{c: _nullable(pd.Series([r[c] for r in rows], index=df.index,
                                               dtype=object))
                        for c in VARIANT_FIELDS if c not in df.columns})


def load_folder(path: str | Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(summaries, samples) of every run saved under ``path`` (a data folder, or a report
    folder with its data/ inside), checked against the schema this version reads."""
    root = Path(path)
    if not root.exists():
        raise FileNotFoundError(f"{root}: no such folder")
    metas = sorted(root.rglob("*-meta.json"))
    if not metas:
        raise DataSchemaError(f"{root}: no results (no *-meta.json from `vgkernels bench` or a "
                              "report's data/)")
    summaries, samples = [], []
    for m in metas:
        try:
            meta = json.loads(m.read_text())
        except (OSError, ValueError) as exc:
            raise DataSchemaError(f"{m}: unreadable ({exc})") from None
        schema = meta.get("schema", 1) if isinstance(meta, dict) else None
        if not isinstance(schema, int) or schema > DATA_SCHEMA:
            raise DataSchemaError(f"{m}: data schema {schema!r}; this vgkernels reads up to "
                                  f"{DATA_SCHEMA} (a newer version wrote it)")
        stem = m.name.removesuffix("-meta.json")
        for kind, into in (("", summaries), ("-samples", samples)):
            f = m.with_name(f"{stem}{kind}.parquet")
            if not f.exists():
                f = f.with_suffix(".csv")
            if f.exists():
                try:
                    df = load(f)
                except Exception as exc:  # noqa: BLE001 - any reader error names the file
                    raise DataSchemaError(f"{f}: unreadable ({exc})") from None
                into.append(upgrade(df, schema).assign(schema=schema))
    cat = [pd.concat(x, ignore_index=True) if x else pd.DataFrame() for x in (summaries, samples)]
    return cat[0], cat[1]
