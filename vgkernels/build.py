"""Build a backend's kernels: generate the IR (`vgkernels.kernels`), compile it through the
disk cache (`vgkernels.jit`), load it, once per process for each (backend, variant)."""

from __future__ import annotations

import functools
import multiprocessing
import os
import threading
import time
from collections.abc import Iterable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass

from . import abi, jit
from .backends import Backend, get
from .kernels import generate
from .variant import Variant


@dataclass
class Kernels:
    """A backend's compiled kernels: symbol addresses by op, plus what was built."""

    backend: Backend
    variant: Variant
    prefix: str
    library: jit.Library
    generate_seconds: float

    def address(self, op: str) -> int:
        return self.library.address(f"{self.prefix}_{op}")

    @property
    def ops(self) -> list[str]:
        ops = list(abi.SIGNATURES)
        if self.backend.two_slice:
            ops.append("seal_two_slice")
        return ops

    def ir(self) -> str:
        return self.library.ir

    def asm(self) -> str:
        return self.library.asm()


_building = threading.Lock()


@functools.cache
def _kernels(name: str, variant: Variant) -> Kernels:
    be = get(name)
    t0 = time.perf_counter()
    prefix, text = generate(be, variant)
    gen = time.perf_counter() - t0
    lib = jit.compile_ir(prefix, text, be.llvm_features, be.llvm_cpu)
    return Kernels(be, variant, prefix, lib, gen)


def kernels(backend: str | Backend, variant: Variant | None = None) -> Kernels:
    """Compiled kernels of a backend and variant (cached in-process and on disk)."""
    be = backend if isinstance(backend, Backend) else get(backend)
    v = (variant or Variant()).resolved(be)
    with _building:  # threads asking for the same set at once compile it once
        return _kernels(be.name, v)


def _warm_one(case: tuple[str, Variant]) -> None:
    be = get(case[0])
    prefix, text = generate(be, case[1])
    jit.cached_object(prefix, text, be.llvm_features, be.llvm_cpu)


def warm(cases: Iterable[tuple[str | Backend, Variant | None]], workers: int = 0) -> int:
    """Compile kernel sets into the disk cache in spawned processes (``workers``; 0: one per
    CPU), so that `kernels` only loads them: a cold set takes seconds of one core.  Does
    nothing without a usable disk cache or with one worker (`kernels` compiles then).
    Returns how many sets were handed to the workers."""
    todo = []
    for backend, variant in cases:
        be = backend if isinstance(backend, Backend) else get(backend)
        case = (be.name, (variant or Variant()).resolved(be))
        if case not in todo:
            todo.append(case)
    workers = min(workers or os.cpu_count() or 1, len(todo))
    if workers < 2 or jit.cache_dir() is None:
        return 0
    # spawn, not fork: the caller (a notebook's kernel) may hold threads and LLVM state
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        list(pool.map(_warm_one, todo))
    return len(todo)
