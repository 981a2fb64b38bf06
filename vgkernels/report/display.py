"""Numbers formatted for people, in every table a report notebook shows.

One rule set, chosen by column name, so that no notebook formats its own cells:

* times (a column named ``ns`` / ``*_ns`` / ``ns_*``, or listed in ``ns=``): 3 significant
  figures, never scientific notation (``30.8``, ``1,080``, ``0.0123``);
* ratios (a ``/`` or the word ``ratio`` in the name, ``×``, ``vs ``): 2 decimals;
* fractions shown as percentages (``excess``, ``change``, ``share``, ``penalty_pct``):
  ``+4.5%``;
* fit quality (``r2*``): 3 decimals;
* other floats: 3 significant figures; integers with thousands separators; text as is.

:func:`frame_html` renders a DataFrame with these rules inside a horizontally scrolling box
(wide tables scroll instead of being clipped); :func:`install` makes it the HTML form of every
DataFrame a notebook displays, so the notebooks stay thin.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable
from typing import Any

import pandas as pd

NA = "—"

_RATIO = re.compile(r"/|\bratio\b|×|^vs\b|\bvs\b", re.I)
_NS = re.compile(r"(^|[_\s(])ns($|[_\s)])|^ns$|_ns$", re.I)
_PCT = re.compile(r"^(excess|change|share)|_pct$|%$|^split→full", re.I)
_R2 = re.compile(r"^r2|^r²", re.I)


def sig(x: float, digits: int = 3) -> str:
    """``x`` with ``digits`` significant figures, in positional notation with thousands
    separators (never ``3.084062e+01``)."""
    if x is None or not isinstance(x, int | float) or not math.isfinite(x):
        return NA
    if x == 0:
        return "0"
    exp = math.floor(math.log10(abs(x)))
    rounded = round(x, digits - 1 - exp)
    if abs(rounded) >= 10 ** (exp + 1):  # 9.996 -> 10.0: one digit more before the point
        exp += 1
    return f"{rounded:,.{max(0, digits - 1 - exp)}f}"


def ratio(x: float) -> str:
    """A ratio with 2 decimals."""
    return NA if _missing(x) else f"{float(x):.2f}"


def pct(x: float) -> str:
    """A fraction as a signed percentage with 1 decimal."""
    return NA if _missing(x) else f"{float(x):+.1%}"


def _missing(x: Any) -> bool:
    try:
        return x is None or bool(pd.isna(x))
    except (TypeError, ValueError):
        return False


def column_kind(name: Any, ns: Iterable[str] = ()) -> str:
    """``ns`` | ``ratio`` | ``pct`` | ``r2`` | ``number`` for a column name (a tuple of a
    MultiIndex is judged by its parts)."""
    parts = [str(p) for p in (name if isinstance(name, tuple) else (name,))]
    text = " ".join(parts)
    if text in set(ns) or any(p in set(ns) for p in parts):
        return "ns"
    if _R2.search(text):
        return "r2"
    if _RATIO.search(text):
        return "ratio"
    if _PCT.search(text):
        return "pct"
    if _NS.search(text):
        return "ns"
    return "number"


def cell_formatter(kind: str) -> Callable[[Any], str]:
    """The function that formats one cell of a column of this kind."""

    def fmt(x: Any) -> str:
        if _missing(x):
            return NA
        if isinstance(x, bool) or not isinstance(x, int | float) and not hasattr(x, "dtype"):
            return str(x)
        try:
            v = float(x)
        except (TypeError, ValueError):
            return str(x)
        if kind == "ratio":
            return ratio(v)
        if kind == "pct":
            return pct(v)
        if kind == "r2":
            return f"{v:.3f}"
        if isinstance(x, int) or getattr(getattr(x, "dtype", None), "kind", "") in ("i", "u"):
            return f"{int(v):,}" if abs(v) >= 10_000 else str(int(v))  # counts, bytes
        return sig(v)

    return fmt


def formatters(df: pd.DataFrame, ns: Iterable[str] = ()) -> dict[Any, Callable[[Any], str]]:
    """Per numeric column of ``df``: its cell formatter."""
    ns = tuple(ns)
    out = {}
    for col in df.columns:
        dt = df[col].dtype
        if pd.api.types.is_bool_dtype(dt) or not (pd.api.types.is_numeric_dtype(dt)
                                                  or pd.api.types.is_object_dtype(dt)):
            continue
        out[col] = cell_formatter(column_kind(col, ns))
    return out


def people(df: pd.DataFrame, ns: Iterable[str] = ()) -> pd.DataFrame:
    """``df`` with every numeric cell turned into its formatted text (for CSV-like output
    and tests); the index is kept."""
    out = df.copy()
    for col, f in formatters(df, ns).items():
        out[col] = [f(x) for x in df[col]]
    return out


def frame_html(df: pd.DataFrame, ns: Iterable[str] = ()) -> str:
    """A DataFrame as an HTML table with people's numbers, in a box that scrolls
    horizontally when the table is wider than the page."""
    shown = people(df, ns)
    index = not isinstance(df.index, pd.RangeIndex)
    table = shown.to_html(index=index, border=0, classes="dataframe vg-table", escape=True,
                          na_rep=NA)
    return f'<div class="vg-scroll" style="overflow-x:auto;max-width:100%">{table}</div>'


def install() -> bool:
    """Make :func:`frame_html` the HTML form of every DataFrame an IPython kernel displays
    (and Styler-free: the text form stays pandas' own).  False outside IPython."""
    # lazy: IPython adds 0.07 s to every `vgkernels report` command; only a kernel shows things
    from IPython import get_ipython

    ip = get_ipython()
    if ip is None:
        return False
    ip.display_formatter.formatters["text/html"].for_type(pd.DataFrame, frame_html)
    return True
