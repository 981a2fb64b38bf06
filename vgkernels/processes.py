"""Work that is seconds of one core per item (compiles, the Python taint pass) spread over
spawned processes, one per core by default."""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Iterable
from concurrent.futures import ProcessPoolExecutor
from typing import TypeVar

T = TypeVar("T")
R = TypeVar("R")


def spawn_map(fn: Callable[[T], R], items: Iterable[T], workers: int = 0) -> list[R]:
    """[fn(x) for x in items], in ``workers`` spawned processes (0: one per CPU) when there are
    two or more of both, else in this process.  ``fn`` must be a module-level function.
    Spawn, not fork: the caller (a notebook's kernel) may hold threads and LLVM state."""
    items = list(items)
    workers = min(workers or os.cpu_count() or 1, len(items))
    if workers < 2:
        return [fn(x) for x in items]
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(workers, mp_context=ctx) as pool:
        return list(pool.map(fn, items))


__all__ = ["spawn_map"]
