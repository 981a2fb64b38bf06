"""One LLVM module per (backend, variant): generate, compile through the disk cache, load."""

from __future__ import annotations

import functools
import threading
import time
from dataclasses import dataclass

from llvmlite import ir

from .. import abi, jit
from .. import variant as variant_names
from ..backends import Backend, get
from ..variant import Variant
from . import bulk, entries, keysetup, stream
from .common import Params


def symbol_prefix(backend: Backend, variant: Variant) -> str:
    """The kernels' symbol prefix (`vgkernels.variant.symbol_prefix` owns the form)."""
    return variant_names.symbol_prefix(backend, variant)


def generate(backend: Backend, variant: Variant | None = None, prefix: str | None = None
             ) -> tuple[str, str]:
    """(prefix, IR text) of a backend's kernels."""
    v = (variant or Variant()).resolved(backend)
    prefix = prefix or symbol_prefix(backend, v)
    module = ir.Module(name=prefix)
    params = Params(backend, v, prefix)
    bulk.build_all(module, params)
    entries.build_helpers(module, params)
    keysetup.build_key_init(module, params)
    entries.build_seal_out(module, params, "seal")
    entries.build_seal_out(module, params, "seal_out")
    entries.build_open_out(module, params, "open")
    entries.build_open_out(module, params, "open_out")
    entries.build_gather(module, params)
    entries.build_inner(module, params)
    stream.build_stream(module, params)
    if backend.two_slice:
        entries.build_two_slice(module, params)
    return prefix, str(module)


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
