"""Turning Python buffers into (address, length) for the kernels, with the checks a caller
deserves: plain data, contiguous, writable where written, and no overlap but exact in-place.

`view` takes ONE export of the object and keeps it (in `Buf.keep`) for as long as the Buf
lives: its length and address come from that export, so a resize by another thread in between
is impossible (it raises BufferError there).  The hot paths of `vgkernels.api` go through the
generated entry points instead, which do the same in machine code; `view` serves the rare
calls (key setup, streaming AAD) and the diagnosis of refused arguments."""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from typing import Any

import numpy as np

PAGE = 4096


@dataclass(frozen=True)
class Buf:
    """``n`` bytes at ``addr``: a view of a caller's object (`view`) or memory of our own
    (`alloc`, the benchmark's and timing test's buffers)."""

    addr: int
    n: int
    keep: Any  # the object that owns the memory, kept alive for the call

    @property
    def end(self) -> int:
        return self.addr + self.n

    @classmethod
    def alloc(cls, n: int, data: bytes = b"", page_offset: int | None = None) -> Buf:
        """A zeroed buffer of n bytes (at least one, so it has an address) starting at
        ``page_offset`` within a page (default: 64-byte aligned, wherever malloc puts it):
        where a buffer lies within its page decides 4K aliasing, which timings must fix."""
        if page_offset is None:
            raw = ctypes.create_string_buffer(max(n, 1) + 64)
            addr = (ctypes.addressof(raw) + 63) & ~63
        else:
            raw = ctypes.create_string_buffer(max(n, 1) + PAGE + page_offset)
            addr = ((ctypes.addressof(raw) + PAGE - 1) & ~(PAGE - 1)) + page_offset
        buf = cls(addr, n, raw)
        if data:
            buf.write(data)
        return buf

    def write(self, data: bytes) -> None:
        """Copy ``data`` to the start of the buffer."""
        if len(data) > max(self.n, 1):
            raise ValueError(f"{len(data)} bytes do not fit a {self.n}-byte buffer")
        ctypes.memmove(self.addr, data, len(data))

    def read(self, n: int | None = None) -> bytes:
        """The first ``n`` bytes (default: all of them)."""
        return ctypes.string_at(self.addr, self.n if n is None else n)


def nbytes(obj: Any, name: str) -> int:
    """Length in bytes of a buffer, without touching its data (works for huge views)."""
    try:
        return memoryview(obj).nbytes
    except TypeError:
        raise TypeError(f"{name} must be a bytes-like object (bytes, bytearray, memoryview, "
                        f"numpy array), not {type(obj).__name__}") from None


_PLAIN = frozenset("@=<>!0123456789xcbB?hHiIlLqQnNefdgspZ")


def plain_format(fmt: str | None) -> bool:
    """A struct-module format of plain data: no objects ('O'), pointers ('P') or structures.
    The generated entry points apply the same table (`vgkernels.binding.entries`)."""
    return fmt is None or all(c in _PLAIN for c in fmt)


def view(obj: Any, name: str, writable: bool = False) -> Buf:
    try:
        mv = memoryview(obj)
    except TypeError:
        raise TypeError(f"{name} must be a bytes-like object (bytes, bytearray, memoryview, "
                        f"numpy array), not {type(obj).__name__}") from None
    if not plain_format(mv.format):
        raise TypeError(f"{name} has items of format {mv.format!r}: only plain data (bytes, "
                        "numbers) can be encrypted; objects and pointers are addresses")
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
