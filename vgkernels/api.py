"""`AesGcm`: an AEAD with the shape of `cryptography`'s AESGCM, on vgkernels' compiled kernels.

Every argument is checked before a kernel runs, so bad input raises a precise exception and
leaves the caller's buffers as they were; a wrong tag raises `InvalidTag` after the kernel has
wiped the output, so no unverified plaintext escapes.
"""

from __future__ import annotations

import ctypes
import json
import threading
from collections.abc import Sequence
from importlib import resources
from typing import Any

from . import abi
from .backends import Backend, Variant, choose
from .buffers import Buf, nbytes, overlaps, view
from .kernels.build import Kernels, kernels
from .kernels.common import MAX_AAD, MAX_PLAINTEXT

TAG = 16


class InvalidTag(Exception):
    """The tag did not verify: the ciphertext, nonce, AAD or tag was altered (or the key)."""


def check_lengths(data_len: int, aad_len: int) -> None:
    """GCM's limits (SP 800-38D 5.2.1.1), checked on the numbers alone."""
    if data_len > MAX_PLAINTEXT:
        raise OverflowError(f"data is {data_len} bytes; GCM allows at most 2^36-32 = "
                            f"{MAX_PLAINTEXT} bytes")
    if aad_len > MAX_AAD:
        raise OverflowError(f"associated_data is {aad_len} bytes; GCM allows at most 2^61-1")


def _bind(k: Kernels, op: str, sig=None) -> Any:
    restype, argtypes, _ = sig or abi.SIGNATURES[op]
    return ctypes.CFUNCTYPE(restype, *argtypes)(k.address(op))


_COPY_BELOW_LOCK = threading.Lock()
_DERIVED: dict[str, dict] | None = None


def derived_copy_below() -> dict[str, dict]:
    """Thresholds the copy_below notebook derived (package data), empty if none were shipped."""
    global _DERIVED
    with _COPY_BELOW_LOCK:
        if _DERIVED is None:
            try:
                text = resources.files("vgkernels").joinpath("data/copy_below.json").read_text()
                _DERIVED = json.loads(text)
            except (FileNotFoundError, ValueError, OSError):
                _DERIVED = {}
        return _DERIVED


class _Fns:
    """ctypes bindings of one kernel set (made once per set)."""

    def __init__(self, k: Kernels):
        for op in abi.SIGNATURES:
            setattr(self, op, _bind(k, op))
        self.two_slice = (_bind(k, "seal_two_slice", abi.TWO_SLICE_SIGNATURE)
                          if k.backend.two_slice and _has(k, "seal_two_slice") else None)


def _has(k: Kernels, op: str) -> bool:
    try:
        k.address(op)
        return True
    except KeyError:
        return False


_FNS: dict[int, _Fns] = {}


def _fns(k: Kernels) -> _Fns:
    f = _FNS.get(id(k))
    if f is None:
        f = _FNS[id(k)] = _Fns(k)
    return f


class AesGcm:
    """AES-GCM with a 128-, 192- or 256-bit key.

    ``backend`` names a row of the backend table (default: the best the CPU has, after
    ``VG_CPU_FEATURES``); ``variant`` picks a build of it (tail strategy, group size).
    """

    def __init__(self, key: bytes | bytearray | memoryview, backend: str | None = None,
                 variant: Variant | None = None):
        n = nbytes(key, "key")
        if n not in (16, 24, 32):
            raise ValueError(f"key must be 16, 24 or 32 bytes, got {n}")
        self.backend: Backend = choose(backend)
        self._k = kernels(self.backend, variant)
        self.variant = self._k.variant
        self._f = _fns(self._k)
        self._raw = (ctypes.c_uint8 * (abi.CTX_SIZE + abi.CTX_ALIGN))()
        self._ctx = (ctypes.addressof(self._raw) + abi.CTX_ALIGN - 1) & ~(abi.CTX_ALIGN - 1)
        kb = view(key, "key")
        if self._f.key_init(self._ctx, kb.addr, n) != 0:  # pragma: no cover - checked above
            raise ValueError("key setup failed")

    @classmethod
    def generate_key(cls, bit_length: int) -> bytes:
        if bit_length not in (128, 192, 256):
            raise ValueError("bit_length must be 128, 192 or 256")
        import os

        return os.urandom(bit_length // 8)

    # -- lifetime ----------------------------------------------------------------------------
    def close(self) -> None:
        """Wipe the round keys and powers of H."""
        if getattr(self, "_raw", None) is not None:
            ctypes.memset(self._raw, 0, ctypes.sizeof(self._raw))
            self._raw = None

    def __del__(self) -> None:
        self.close()

    def __enter__(self) -> AesGcm:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def ctx(self) -> int:
        if self._raw is None:
            raise ValueError("this AesGcm was closed")
        return self._ctx

    # -- checks ------------------------------------------------------------------------------
    @staticmethod
    def _nonce(nonce: Any) -> Buf:
        b = view(nonce, "nonce")
        if b.n == 0:
            raise ValueError("nonce must be at least 1 byte (12 bytes is GCM's fast path)")
        return b

    @staticmethod
    def _aad(aad: Any) -> Buf:
        if aad is None:
            return view(b"", "associated_data")
        check_lengths(0, nbytes(aad, "associated_data"))
        return view(aad, "associated_data")

    @staticmethod
    def _tag(tag: Any) -> Buf:
        b = view(tag, "tag")
        if b.n != TAG:
            raise ValueError(f"tag must be {TAG} bytes, got {b.n}")
        return b

    @staticmethod
    def _no_overlap(out: Buf, name: str, others: Sequence[tuple[str, Buf]]) -> None:
        for oname, o in others:
            if overlaps(out, o):
                raise ValueError(f"{name} overlaps {oname}; only exact in-place use is allowed")

    def _rc(self, rc: int) -> None:
        if rc == 0:
            return
        if rc in (-3, -4):
            raise OverflowError("data exceeds GCM's 2^36-32 bytes" if rc == -3
                                else "associated_data exceeds 2^61-1 bytes")
        msg = {-2: "nonce must be at least 1 byte", -5: "tag length must be 4..16"}
        raise ValueError(msg.get(rc, f"kernel returned {rc}"))

    # -- one-shot, the AESGCM shape ------------------------------------------------------------
    def encrypt(self, nonce: Any, data: Any, associated_data: Any,
                copy_below: tuple[int, int] | None | bool = None) -> bytes:
        """ciphertext || tag.  ``data`` is a bytes-like object or a list of pieces.

        For pieces, ``copy_below=(aligned, unaligned)`` copies texts shorter than the threshold
        into the output and seals there; None uses the backend's default, False never copies.
        """
        if isinstance(data, (list, tuple)):
            total = sum(nbytes(p, "data piece") for p in data)
            check_lengths(total, 0)
            out = bytearray(total + TAG)
            tag = self._encrypt_pieces(memoryview(out)[:total], nonce, data, associated_data,
                                       copy_below)
            out[total:] = tag
            return bytes(out)
        n = nbytes(data, "data")
        check_lengths(n, 0)
        nb, ab, src = self._nonce(nonce), self._aad(associated_data), view(data, "data")
        out = bytearray(n + TAG)
        ob = view(out, "out", writable=True)
        tag = ctypes.create_string_buffer(TAG)
        self._rc(self._f.seal_out(self.ctx, nb.addr, nb.n, ab.addr, ab.n, src.addr, ob.addr, n,
                                  tag))
        out[n:] = tag.raw
        return bytes(out)

    def decrypt(self, nonce: Any, data: Any, associated_data: Any) -> bytes:
        """plaintext of ciphertext || tag; raises InvalidTag."""
        n = nbytes(data, "data")
        if n < TAG:
            raise InvalidTag(f"data is {n} bytes, shorter than the {TAG}-byte tag")
        check_lengths(n - TAG, 0)
        nb, ab, src = self._nonce(nonce), self._aad(associated_data), view(data, "data")
        out = bytearray(n - TAG)
        ob = view(out, "out", writable=True)
        rc = self._f.open_out(self.ctx, nb.addr, nb.n, ab.addr, ab.n, src.addr, ob.addr, n - TAG,
                              src.addr + n - TAG, TAG)
        if rc == -1:
            raise InvalidTag("tag mismatch")
        self._rc(rc)
        return bytes(out)

    # -- in place and into a buffer ----------------------------------------------------------------
    def encrypt_in_place(self, nonce: Any, buf: Any, associated_data: Any = None) -> bytes:
        """Encrypt ``buf`` where it is; returns the tag."""
        n = nbytes(buf, "buf")
        check_lengths(n, 0)
        nb, ab = self._nonce(nonce), self._aad(associated_data)
        b = view(buf, "buf", writable=True)
        self._no_overlap(b, "buf", [("nonce", nb), ("associated_data", ab)])
        tag = ctypes.create_string_buffer(TAG)
        self._rc(self._f.seal(self.ctx, nb.addr, nb.n, ab.addr, ab.n, b.addr, n, tag))
        return tag.raw

    def decrypt_in_place(self, nonce: Any, buf: Any, associated_data: Any, tag: Any) -> None:
        """Decrypt ``buf`` where it is; on a wrong tag ``buf`` is zeroed and InvalidTag raised."""
        n = nbytes(buf, "buf")
        check_lengths(n, 0)
        nb, ab, tb = self._nonce(nonce), self._aad(associated_data), self._tag(tag)
        b = view(buf, "buf", writable=True)
        self._no_overlap(b, "buf", [("nonce", nb), ("associated_data", ab), ("tag", tb)])
        rc = self._f.open(self.ctx, nb.addr, nb.n, ab.addr, ab.n, b.addr, n, tb.addr, TAG)
        if rc == -1:
            raise InvalidTag("tag mismatch; the buffer was wiped")
        self._rc(rc)

    def encrypt_into(self, out: Any, nonce: Any, pieces: Any, associated_data: Any = None,
                     copy_below: tuple[int, int] | None | bool = None) -> bytes:
        """Encrypt the concatenation of ``pieces`` (or one buffer) into ``out``; returns the
        tag.  ``out`` must hold the total length; it may be larger."""
        if not isinstance(pieces, (list, tuple)):
            pieces = [pieces]
        total = sum(nbytes(p, "data piece") for p in pieces)
        check_lengths(total, 0)
        on = nbytes(out, "out")
        if on < total:
            raise ValueError(f"out is {on} bytes, too small for {total} bytes of data")
        return self._encrypt_pieces(out, nonce, pieces, associated_data, copy_below)

    def decrypt_into(self, out: Any, nonce: Any, data: Any, associated_data: Any,
                     tag: Any) -> None:
        n = nbytes(data, "data")
        check_lengths(n, 0)
        if nbytes(out, "out") < n:
            raise ValueError(f"out is {nbytes(out, 'out')} bytes, too small for {n} bytes")
        nb, ab, tb = self._nonce(nonce), self._aad(associated_data), self._tag(tag)
        src, ob = view(data, "data"), view(out, "out", writable=True)
        if ob.addr != src.addr:
            self._no_overlap(ob, "out", [("data", src)])
        self._no_overlap(ob, "out", [("nonce", nb), ("associated_data", ab), ("tag", tb)])
        rc = self._f.open_out(self.ctx, nb.addr, nb.n, ab.addr, ab.n, src.addr, ob.addr, n,
                              tb.addr, TAG)
        if rc == -1:
            raise InvalidTag("tag mismatch; out was wiped")
        self._rc(rc)

    def _copy_threshold(self, copy_below: tuple[int, int] | None | bool) -> tuple[int, int]:
        if copy_below is False:
            return (0, 0)
        if copy_below is None or copy_below is True:
            d = derived_copy_below().get(self.backend.name)
            if not d:
                return self.backend.copy_below
            # null: the gather never caught up within the sizes measured, so copy below the
            # largest of them (past it nothing was measured, and the gather is the default)
            top = max(d.get("measured", {}).get("sizes", [65536]) or [65536])
            return tuple(top + 1 if d.get(k) is None else int(d[k])  # type: ignore[return-value]
                         for k in ("aligned", "unaligned"))
        a, u = copy_below
        return int(a), int(u)

    def _encrypt_pieces(self, out: Any, nonce: Any, pieces: Sequence[Any], associated_data: Any,
                        copy_below: tuple[int, int] | None | bool) -> bytes:
        ctx = self.ctx  # raises on a closed object before anything is copied into out
        nb, ab = self._nonce(nonce), self._aad(associated_data)
        bufs = [view(p, "data piece") for p in pieces]
        total = sum(b.n for b in bufs)
        ob = view(out, "out", writable=True)
        ob = Buf(ob.addr, total, ob.keep)
        pos = ob.addr
        for i, b in enumerate(bufs):
            if b.addr != pos:  # a piece exactly where its output goes is in place, not overlap
                self._no_overlap(ob, "out", [(f"piece {i}", b)])
            pos += b.n
        self._no_overlap(ob, "out", [("nonce", nb), ("associated_data", ab)])
        tag = ctypes.create_string_buffer(TAG)
        f = self._f
        if (f.two_slice is not None and len(bufs) == 2 and bufs[1].n <= 1
                and bufs[0].n >= 256 and nb.n == 12 and ab.n <= 16):
            rc = f.two_slice(ctx, nb.addr, nb.n, ab.addr, ab.n, bufs[0].addr, bufs[0].n,
                             bufs[1].addr, bufs[1].n, ob.addr, tag)
            if rc == 0:
                return tag.raw
        aligned_t, unaligned_t = self._copy_threshold(copy_below)
        aligned = all(b.n % 16 == 0 for b in bufs[:-1])
        if total < (aligned_t if aligned else unaligned_t):
            pos = 0
            for b in bufs:
                ctypes.memmove(ob.addr + pos, b.addr, b.n)
                pos += b.n
            self._rc(f.seal(ctx, nb.addr, nb.n, ab.addr, ab.n, ob.addr, total, tag))
            return tag.raw
        arr = (abi.Piece * max(len(bufs), 1))(*[abi.Piece(b.addr, b.n) for b in bufs])
        self._rc(f.seal_gather(ctx, nb.addr, nb.n, ab.addr, ab.n, arr, len(bufs), ob.addr,
                               tag))
        return tag.raw

    # -- streaming ---------------------------------------------------------------------------------
    def encryptor(self, nonce: Any, associated_data: Any = None) -> Encryptor:
        return Encryptor(self, nonce, associated_data)

    def decryptor(self, nonce: Any, associated_data: Any = None) -> Decryptor:
        return Decryptor(self, nonce, associated_data)


class _Stream:
    _encrypt = True

    def __init__(self, aead: AesGcm, nonce: Any, associated_data: Any):
        self._a = aead
        self._raw = (ctypes.c_uint8 * (abi.STREAM_SIZE + 64))()
        self._st = (ctypes.addressof(self._raw) + 63) & ~63
        self._len = 0
        self._done = False
        nb = aead._nonce(nonce)
        aead._rc(aead._f.stream_init(aead.ctx, self._st, nb.addr, nb.n))
        if associated_data is not None:
            self.authenticate_additional_data(associated_data)

    def __del__(self) -> None:  # the state holds E(J0) and the open block: wipe it
        raw = getattr(self, "_raw", None)
        if raw is not None:
            ctypes.memset(raw, 0, ctypes.sizeof(raw))

    def authenticate_additional_data(self, data: Any) -> None:
        """More AAD; only before the first update."""
        if self._done:
            raise ValueError("this stream is finished")
        self._aad_len = getattr(self, "_aad_len", 0) + nbytes(data, "associated_data")
        check_lengths(0, self._aad_len)
        b = view(data, "associated_data")
        rc = self._a._f.stream_aad(self._a.ctx, self._st, b.addr, b.n)
        if rc == -6:
            raise ValueError("associated data must come before the data")
        self._a._rc(rc)

    def update(self, data: Any) -> bytes:
        n = nbytes(data, "data")
        check_lengths(self._len + n, 0)  # before allocating the output
        out = bytearray(n)
        self.update_into(data, out)
        return bytes(out)

    def update_into(self, data: Any, out: Any) -> int:
        if self._done:
            raise ValueError("this stream is finished")
        n = nbytes(data, "data")
        check_lengths(self._len + n, 0)
        if nbytes(out, "out") < n:
            raise ValueError(f"out is too small for {n} bytes")
        src, ob = view(data, "data"), view(out, "out", writable=True)
        if ob.addr != src.addr:
            self._a._no_overlap(Buf(ob.addr, n, ob.keep), "out", [("data", src)])
        op = self._a._f.stream_encrypt if self._encrypt else self._a._f.stream_decrypt
        self._a._rc(op(self._a.ctx, self._st, src.addr, ob.addr, n))
        self._len += n
        return n

    def _finish(self) -> bytes:
        if self._done:
            raise ValueError("this stream is finished")
        tag = ctypes.create_string_buffer(TAG)
        self._a._rc(self._a._f.stream_finish(self._a.ctx, self._st, tag))
        self._done = True
        ctypes.memset(self._raw, 0, ctypes.sizeof(self._raw))
        return tag.raw


class Encryptor(_Stream):
    """Streaming encryption: update(...) as often as needed, then finalize() -> tag."""

    def finalize(self) -> bytes:
        return self._finish()


class Decryptor(_Stream):
    """Streaming decryption.  Plaintext from update() is unverified until finalize_with_tag()
    returns; callers must not act on it before then (as with any streaming AEAD)."""

    _encrypt = False

    def finalize_with_tag(self, tag: Any) -> None:
        import hmac

        tb = self._a._tag(tag)
        want = self._finish()
        if not hmac.compare_digest(want, bytes(memoryview(tb.keep[1]))):
            raise InvalidTag("tag mismatch")
