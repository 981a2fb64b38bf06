"""The per-CPU recommendation table: for each LLVM CPU name, the variant llvm-mca predicts
fastest for every backend the CPU supports, and the best backend.  Data, not code: the
notebook 07_predict derives it; ``load`` validates it.

Shape (schema 1; like the per-CPU copy_below thresholds)::

    {"schema": 1, "kind": "vgkernels.predict_recommend", "package_version": "...",
     "llvm_mca": "19.1.7", "date": "2026-11-30", "size": 16384,
     "cpus": {"znver4": {"best": "vaes_avx512",
                         "backends": {"vaes_avx512": {"variant": {"group": 32, "karatsuba":
                             true, "skew": 0, "stitch_min": 32}, "cycles_per_byte": 0.211,
                             "leftover_cycles_per_byte": 0.247, "bottleneck": "...",
                             "default_cycles_per_byte": 0.211, "variants_compared": 6}}}}}
"""

from __future__ import annotations

import json
import warnings
from datetime import date as _date
from importlib import resources
from pathlib import Path
from typing import Any

import pandas as pd

from .. import __version__
from ..backends import BY_NAME, get
from ..variant import Variant

SCHEMA = 1
KIND = "vgkernels.predict_recommend"  # like vgkernels.dispatch's "vgkernels.copy_below"
FILENAME = "predict_recommend.json"
_VARIANT_KEYS = ("group", "karatsuba", "skew", "stitch_min")


def derive(df: pd.DataFrame, mca_version: str, when: str | None = None,
           size: int = 16384) -> dict[str, Any]:
    """The table from predictor.table rows: per CPU and backend the variant with the fewest
    predicted stitched-loop cycles per byte (ties: the default, then the first listed)."""
    st = df[df["region"] == "stitch"]
    lo = df[df["region"] == "leftover"].set_index(["cpu", "backend", "variant"])
    cpus: dict[str, Any] = {}
    for cpu, per_cpu in st.groupby("cpu", sort=False):
        bes: dict[str, Any] = {}
        for be, rows in per_cpu.groupby("backend", sort=False):
            rows = rows.assign(_d=(rows["variant"] != "default").astype(int))
            best = rows.sort_values(["cycles_per_byte", "_d"], kind="stable").iloc[0]
            default = rows[rows["variant"] == "default"]
            key = (cpu, be, best["variant"])
            bes[str(be)] = {
                "variant": {k: (bool(best[k]) if k == "karatsuba" else int(best[k]))
                            for k in _VARIANT_KEYS},
                "label": str(best["variant"]),
                "cycles_per_byte": round(float(best["cycles_per_byte"]), 4),
                "leftover_cycles_per_byte": (round(float(lo.loc[key, "cycles_per_byte"]), 4)
                                             if key in lo.index else None),
                "bottleneck": str(best["bottleneck"]),
                "default_cycles_per_byte": (round(float(default["cycles_per_byte"].iloc[0]), 4)
                                            if len(default) else None),
                "variants_compared": int(rows["variant"].nunique()),
            }
        fastest = min(bes, key=lambda b: bes[b]["cycles_per_byte"])
        cpus[str(cpu)] = {"best": fastest, "backends": bes}
    return {"schema": SCHEMA, "kind": KIND, "package_version": __version__,
            "llvm_mca": mca_version,
            "date": when or _date.today().isoformat(), "size": size, "cpus": cpus}


def validate(obj: Any) -> dict[str, Any]:
    """``obj`` if it is a well-formed table, else ValueError saying what is wrong."""
    def need(cond: bool, what: str) -> None:
        if not cond:
            raise ValueError(f"recommendation table: {what}")

    need(isinstance(obj, dict), "not an object")
    need(obj.get("schema") == SCHEMA and obj.get("kind") == KIND,
         f"kind {obj.get('kind')!r} schema {obj.get('schema')!r}, expected {KIND!r} {SCHEMA}")
    need(isinstance(obj.get("llvm_mca"), str) and isinstance(obj.get("date"), str),
         "llvm_mca and date must be strings")
    cpus = obj.get("cpus")
    need(isinstance(cpus, dict) and bool(cpus), "cpus must be a non-empty object")
    for cpu, entry in cpus.items():
        need(isinstance(entry, dict) and isinstance(entry.get("backends"), dict),
             f"{cpu}: no backends")
        need(entry.get("best") in entry["backends"], f"{cpu}: best is not one of its backends")
        for be, rec in entry["backends"].items():
            need(be in BY_NAME, f"{cpu}: unknown backend {be!r}")
            v = rec.get("variant")
            need(isinstance(v, dict) and set(v) == set(_VARIANT_KEYS),
                 f"{cpu}/{be}: variant needs exactly {', '.join(_VARIANT_KEYS)}")
            try:
                Variant(**v).resolved(get(be))
            except (TypeError, ValueError) as e:
                raise ValueError(f"recommendation table: {cpu}/{be}: {e}") from None
            c = rec.get("cycles_per_byte")
            need(isinstance(c, (int, float)) and c > 0, f"{cpu}/{be}: cycles_per_byte")
    return obj


def load(path: str | Path) -> dict[str, Any]:
    return validate(json.loads(Path(path).read_text()))


def write(obj: dict[str, Any], path: str | Path) -> Path:
    path = Path(path)
    path.write_text(json.dumps(validate(obj), indent=2) + "\n")
    return path


def shipped() -> dict[str, Any] | None:
    """The table shipped in the package (vgkernels/data/predict_recommend.json), None when
    there is none; a damaged one is skipped with a warning naming it (it only advises)."""
    f = resources.files("vgkernels").joinpath(f"data/{FILENAME}")
    try:
        return validate(json.loads(f.read_text()))
    except FileNotFoundError:
        return None
    except ValueError as exc:
        warnings.warn(f"vgkernels/data/{FILENAME} skipped: {exc}", RuntimeWarning, stacklevel=2)
        return None


def advice(obj: dict[str, Any] | None, cpu: str) -> str | None:
    """One line: what llvm-mca predicts fastest on ``cpu`` (None: the table lacks it)."""
    entry = (obj or {}).get("cpus", {}).get(cpu)
    if entry is None:
        return None
    best = entry["best"]
    rec = entry["backends"][best]
    base = rec.get("default_cycles_per_byte")
    vs = f" against {base:.3f} for its default" if base else ""
    if rec.get("variants_compared") == 1:
        vs += " (only the defaults were predicted)"
    return (f"llvm-mca {obj['llvm_mca']} ({obj['date']}) predicts {best} with "
            f"{rec['label']} fastest on {cpu}: {rec['cycles_per_byte']:.3f} cycles/B at "
            f"{obj['size']} B{vs}")


def variant_for(obj: dict[str, Any], cpu: str, backend: str) -> Variant | None:
    """The recommended Variant of ``backend`` on ``cpu`` (None: not in the table)."""
    rec = obj["cpus"].get(cpu, {}).get("backends", {}).get(backend)
    return None if rec is None else Variant(**rec["variant"])


__all__ = ["FILENAME", "KIND", "SCHEMA", "advice", "derive", "load", "shipped", "validate",
           "variant_for", "write"]
