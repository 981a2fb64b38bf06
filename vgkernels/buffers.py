"""Turning Python buffers into (address, length) for the kernels, with the checks a caller
deserves: contiguous, writable where written, and no overlap but exact in-place."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class Buf:
    addr: int
    n: int
    keep: Any  # the object that owns the memory, kept alive for the call

    @property
    def end(self) -> int:
        return self.addr + self.n


def nbytes(obj: Any, name: str) -> int:
    """Length in bytes of a buffer, without touching its data (works for huge views)."""
    try:
        return memoryview(obj).nbytes
    except TypeError:
        raise TypeError(f"{name} must be a bytes-like object (bytes, bytearray, memoryview, "
                        f"numpy array), not {type(obj).__name__}") from None


def view(obj: Any, name: str, writable: bool = False) -> Buf:
    try:
        mv = memoryview(obj)
    except TypeError:
        raise TypeError(f"{name} must be a bytes-like object (bytes, bytearray, memoryview, "
                        f"numpy array), not {type(obj).__name__}") from None
    if not mv.c_contiguous:
        raise ValueError(f"{name} must be C-contiguous")
    if writable and mv.readonly:
        raise TypeError(f"{name} is read-only; in-place and into-buffer calls need a writable "
                        "buffer (bytearray, writable memoryview or numpy array)")
    if mv.nbytes == 0:  # any empty shape, e.g. (0, 16): memoryview cannot cast those
        return Buf(_EMPTY_ADDR, 0, (obj, mv))
    arr = np.frombuffer(mv.cast("B") if mv.ndim != 1 or mv.format != "B" else mv, dtype=np.uint8)
    return Buf(int(arr.ctypes.data) if arr.size else _EMPTY_ADDR, int(arr.size), (obj, mv, arr))


_EMPTY = np.zeros(64, dtype=np.uint8)  # a valid address for empty buffers: never read
_EMPTY_ADDR = int(_EMPTY.ctypes.data)


def overlaps(a: Buf, b: Buf) -> bool:
    return a.n > 0 and b.n > 0 and a.addr < b.end and b.addr < a.end
