"""Analysis of timing frames: copy_below crossover, cost models, PR-thread tables."""

from __future__ import annotations

from .costmodel import CostModel, coef_table, excess, fit_by, fit_cost, fit_grouped
from .crossover import (
    CrossoverResult,
    copy_below,
    copy_below_table,
    crossover,
    crossover_samples,
)
from .tables import ab_table, ratio_table, summary, to_text

__all__ = [
    "CostModel",
    "CrossoverResult",
    "ab_table",
    "coef_table",
    "copy_below",
    "copy_below_table",
    "crossover",
    "crossover_samples",
    "excess",
    "fit_by",
    "fit_cost",
    "fit_grouped",
    "ratio_table",
    "summary",
    "to_text",
]
