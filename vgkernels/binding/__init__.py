"""The Python binding of a kernel set: entry points generated as IR (see `entries`), compiled
through the same cache as the kernels, and bound per key as builtin functions."""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Callable
from typing import Any

import llvmlite.binding as llvm

from .. import abi, jit
from ..build import Kernels
from . import capi, entries
from .entries import ENTRIES, PATHS

__all__ = ["ENTRIES", "Binding", "binding"]

_lock = threading.Lock()


class Binding:
    """A kernel set's Python entries, compiled and loaded; `bind(holder)` makes the callables
    for one key context."""

    def __init__(self, k: Kernels):
        capi.register()
        for op in k.ops:  # the entries call the kernels by name
            llvm.add_symbol(f"{k.prefix}_{op}", k.address(op))
        text = entries.generate(k.backend, k.prefix)
        self.library = jit.compile_ir(f"{k.prefix}_py", text, k.backend.llvm_features,
                                      k.library.cpu_name)
        self.addresses = {name: self.library.address(f"{k.prefix}_py_{name}")
                          for name in ENTRIES}
        self._paths = (ctypes.c_int64 * len(PATHS)).from_address(
            self.library.address(f"{k.prefix}_py_paths"))

    def paths(self) -> dict[str, int]:
        """How often encrypt_pieces took each kernel (two-slice, copy + seal, gather) in this
        process, over every key of this kernel set."""
        return dict(zip(PATHS, self._paths, strict=True))

    def bind(self, holder: Any) -> dict[str, Callable[..., Any]]:
        """{entry name: builtin function with ``holder`` (the key context's memory) as self}."""
        return {name: capi.function(name, addr, holder) for name, addr in self.addresses.items()}


_BINDINGS: dict[int, Binding] = {}


def binding(k: Kernels) -> Binding:
    """The binding of a kernel set (made once per set, thread-safe)."""
    b = _BINDINGS.get(id(k))
    if b is None:
        with _lock:
            b = _BINDINGS.get(id(k))
            if b is None:
                b = _BINDINGS[id(k)] = Binding(k)
    return b


CTX_HOLDER_SIZE = abi.CTX_SIZE + abi.CTX_ALIGN
