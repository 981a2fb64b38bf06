"""Build a backend's kernels: generate the IR (`vgkernels.kernels`), compile it through the
disk cache (`vgkernels.jit`), load it, once per process for each (backend, variant)."""

from __future__ import annotations

import functools
import threading
import time
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
