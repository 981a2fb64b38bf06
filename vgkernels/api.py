"""`AesGcm`: an AEAD with the shape of `cryptography`'s AESGCM, on vgkernels' compiled kernels.

Calls go through entry points generated as IR (`vgkernels.binding`): each argument's buffer is
acquired once and held for the whole call, so a buffer another thread resizes cannot be
measured in one state and used in another.  When an entry refuses its arguments it returns a
code, and the checks below (`_Diagnose`) say precisely what is wrong, in the order a reader
expects; nothing was read or written.  A wrong tag raises `InvalidTag` after the kernel has
wiped the output, so no unverified plaintext escapes.  A key context that was never set up or
was wiped fails closed: every kernel checks it before it touches a buffer.
"""

from __future__ import annotations

import ctypes
import hmac
import os
import time
from collections.abc import Sequence
from typing import Any

from . import abi, dispatch
from .abi import MAX_AAD, MAX_PLAINTEXT
from .backends import Backend, choose
from .binding import CTX_HOLDER_SIZE, binding
from .binding import entries as codes
from .buffers import Buf, nbytes, overlaps, view
from .build import Kernels, kernels
from .variant import Variant

TAG = 16

__all__ = ["AesGcm", "Decryptor", "Encryptor", "InvalidTag", "check_lengths"]


class InvalidTag(Exception):
    """The tag did not verify: the ciphertext, nonce, AAD or tag was altered (or the key)."""


def check_lengths(data_len: int, aad_len: int) -> None:
    """GCM's limits (SP 800-38D 5.2.1.1), checked on the numbers alone."""
    if data_len > MAX_PLAINTEXT:
        raise OverflowError(f"data is {data_len} bytes; GCM allows at most 2^36-32 = "
                            f"{MAX_PLAINTEXT} bytes")
    if aad_len > MAX_AAD:
        raise OverflowError(f"associated_data is {aad_len} bytes; GCM allows at most 2^61-1")


def _ctypes_fn(k: Kernels, op: str) -> Any:
    """A kernel bound with PYFUNCTYPE: the GIL stays held, so `close` cannot run beside it.
    Used for the calls made once per key or per stream (setup, AAD, finish)."""
    restype, argtypes, _ = abi.SIGNATURES[op]
    return ctypes.PYFUNCTYPE(restype, *argtypes)(k.address(op))


class _Fns:
    """A kernel set's slow-path functions (made once per set)."""

    def __init__(self, k: Kernels):
        for op in ("key_init", "stream_init", "stream_aad", "stream_finish"):
            setattr(self, op, _ctypes_fn(k, op))


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

    Objects are safe to share between threads; calls on 4 KiB and more release the GIL.
    `close` (or leaving a ``with`` block) wipes the keys, waiting for calls in flight; every
    later call raises ValueError.  `copy.copy` makes an independent object; pickling is
    refused (the object is key material).
    """

    def __init__(self, key: bytes | bytearray | memoryview, backend: str | None = None,
                 variant: Variant | None = None):
        kb = view(key, "key")
        if kb.n not in (16, 24, 32):
            raise ValueError(f"key must be 16, 24 or 32 bytes, got {kb.n}")
        self.backend: Backend = choose(backend)
        self._k = kernels(self.backend, variant)
        self.variant: Variant = self._k.variant
        self._f = _fns(self._k)
        self._closed = False
        self._holder: Any = (ctypes.c_uint8 * CTX_HOLDER_SIZE)()
        self._ctx = (ctypes.addressof(self._holder) + abi.CTX_ALIGN - 1) & ~(abi.CTX_ALIGN - 1)
        if self._f.key_init(self._ctx, kb.addr, kb.n) != 0:  # pragma: no cover - checked above
            raise ValueError("key setup failed")
        self._bind()

    def _bind(self) -> None:
        fns = binding(self._k).bind(self._holder)
        self._enc, self._dec = fns["encrypt"], fns["decrypt"]
        self._enc_ip, self._dec_ip = fns["encrypt_in_place"], fns["decrypt_in_place"]
        self._enc_into, self._dec_into = fns["encrypt_into"], fns["decrypt_into"]
        self._enc_pieces = fns["encrypt_pieces"]
        self._stream_enc, self._stream_dec = fns["stream_encrypt"], fns["stream_decrypt"]
        self._closed = False
        self._below = dispatch.copy_below(self.backend)

    @classmethod
    def generate_key(cls, bit_length: int) -> bytes:
        """A fresh random key of 128, 192 or 256 bits (os.urandom)."""
        if bit_length not in (128, 192, 256):
            raise ValueError("bit_length must be 128, 192 or 256")
        return os.urandom(bit_length // 8)

    # -- the copy_below dispatch ---------------------------------------------------------------
    @property
    def copy_below(self) -> dispatch.Thresholds:
        """The (aligned, unaligned) thresholds `encrypt` of pieces uses by default, with where
        they came from (`vgkernels.dispatch`)."""
        return self._below

    # -- lifetime ------------------------------------------------------------------------------
    def close(self) -> None:
        """Wipe the round keys and powers of H.  Calls running beside it (with the GIL
        released) finish first; calls after it raise ValueError."""
        if getattr(self, "_holder", None) is None or self._closed:
            return
        self._closed = True
        ctx = self._ctx
        # Every kernel checks the magic word first: from here no new call reads the keys.
        ctypes.c_uint32.from_address(ctx + abi.CTX_MAGIC).value = 0
        inflight = ctypes.c_uint32.from_address(ctx + abi.CTX_INFLIGHT)
        while inflight.value:  # calls that counted themselves in before the magic went
            time.sleep(0)
        ctypes.memset(self._holder, 0, ctypes.sizeof(self._holder))

    def __del__(self) -> None:
        self.close()

    def __enter__(self) -> AesGcm:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __copy__(self) -> AesGcm:
        """An independent object with the same key: closing one leaves the other working."""
        if self._closed:
            raise ValueError("this AesGcm was closed")
        new = object.__new__(type(self))
        new.backend, new._k, new.variant, new._f = self.backend, self._k, self.variant, self._f
        new._holder = (ctypes.c_uint8 * CTX_HOLDER_SIZE)()
        new._ctx = (ctypes.addressof(new._holder) + abi.CTX_ALIGN - 1) & ~(abi.CTX_ALIGN - 1)
        ctypes.memmove(new._ctx, self._ctx, abi.CTX_SIZE)
        ctypes.c_uint32.from_address(new._ctx + abi.CTX_INFLIGHT).value = 0
        new._bind()
        return new

    def __deepcopy__(self, memo: dict) -> AesGcm:
        return self.__copy__()

    def __reduce__(self) -> Any:
        raise TypeError("AesGcm cannot be pickled: it holds key material (keep the key and "
                        "make a new AesGcm instead)")

    @property
    def ctx(self) -> int:
        """Address of the key context (for the C ABI); raises once closed."""
        if self._closed:
            raise ValueError("this AesGcm was closed")
        return self._ctx

    # -- one-shot, the AESGCM shape ------------------------------------------------------------
    def encrypt(self, nonce: Any, data: Any, associated_data: Any,
                copy_below: tuple[int, int] | None | bool = None) -> bytes:
        """ciphertext || tag.  ``data`` is a bytes-like object or a list of pieces.

        For pieces, ``copy_below=(aligned, unaligned)`` copies texts shorter than the threshold
        into the output and seals there; None uses `copy_below` (the thresholds measured for
        this CPU), False never copies.
        """
        if data.__class__ is list or data.__class__ is tuple:
            return self._pieces(None, nonce, data, associated_data, copy_below)
        r = self._enc(nonce, data, associated_data)
        if r.__class__ is bytes:
            return r
        raise _Diagnose(self, r, "encrypt").one_shot(nonce, data, associated_data)

    def decrypt(self, nonce: Any, data: Any, associated_data: Any) -> bytes:
        """plaintext of ciphertext || tag; raises InvalidTag."""
        r = self._dec(nonce, data, associated_data)
        if r.__class__ is bytes:
            return r
        raise _Diagnose(self, r, "decrypt").one_shot(nonce, data, associated_data)

    # -- in place and into a buffer ------------------------------------------------------------
    def encrypt_in_place(self, nonce: Any, buf: Any, associated_data: Any = None) -> bytes:
        """Encrypt ``buf`` where it is; returns the tag."""
        r = self._enc_ip(nonce, buf, associated_data)
        if r.__class__ is bytes:
            return r
        raise _Diagnose(self, r, "encrypt_in_place").in_place(nonce, buf, associated_data)

    def decrypt_in_place(self, nonce: Any, buf: Any, associated_data: Any, tag: Any) -> None:
        """Decrypt ``buf`` where it is; on a wrong tag ``buf`` is zeroed and InvalidTag raised."""
        r = self._dec_ip(nonce, buf, associated_data, tag)
        if r != 0:
            raise _Diagnose(self, r, "decrypt_in_place").in_place(nonce, buf, associated_data,
                                                                   tag)

    def encrypt_into(self, out: Any, nonce: Any, pieces: Any, associated_data: Any = None,
                     copy_below: tuple[int, int] | None | bool = None) -> bytes:
        """Encrypt the concatenation of ``pieces`` (or one buffer) into ``out``; returns the
        tag.  ``out`` must hold the total length; it may be larger."""
        if out is None:  # the pieces entry reads None as "make the output"
            view(out, "out", writable=True)
        if pieces.__class__ is list or pieces.__class__ is tuple:
            return self._pieces(out, nonce, pieces, associated_data, copy_below)
        r = self._enc_into(out, nonce, pieces, associated_data)
        if r.__class__ is bytes:
            return r
        raise _Diagnose(self, r, "encrypt_into").pieces(out, nonce, [pieces], associated_data)

    def decrypt_into(self, out: Any, nonce: Any, data: Any, associated_data: Any,
                     tag: Any) -> None:
        """Decrypt ``data`` into ``out`` (at least as long; it may be ``data`` itself); on a
        wrong tag ``out`` is zeroed and InvalidTag raised."""
        r = self._dec_into(out, nonce, data, associated_data, tag)
        if r != 0:
            raise _Diagnose(self, r, "decrypt_into").decrypt_into(out, nonce, data,
                                                                   associated_data, tag)

    def _pieces(self, out: Any, nonce: Any, pieces: Sequence[Any], associated_data: Any,
                copy_below: tuple[int, int] | None | bool) -> bytes:
        if copy_below is None or copy_below is True:
            a, u = self._below.aligned, self._below.unaligned
        elif copy_below is False:
            a = u = 0
        else:
            a, u = (int(x) for x in copy_below)
        t = pieces if pieces.__class__ is tuple else tuple(pieces)
        r = self._enc_pieces(out, nonce, t, associated_data, a, u)
        if r.__class__ is bytes:
            return r
        raise _Diagnose(self, r, "encrypt").pieces(out, nonce, t, associated_data)

    # -- streaming -----------------------------------------------------------------------------
    def encryptor(self, nonce: Any, associated_data: Any = None) -> Encryptor:
        """A streaming encryption: ``update``/``update_into`` in chunks, then ``finalize()``
        returns the tag."""
        return Encryptor(self, nonce, associated_data)

    def decryptor(self, nonce: Any, associated_data: Any = None) -> Decryptor:
        """A streaming decryption: ``update``/``update_into`` in chunks, then
        ``finalize_with_tag(tag)``; the plaintext is unverified until that returns."""
        return Decryptor(self, nonce, associated_data)


_NO_TAG = object()


class _Diagnose:
    """Turns an entry's refusal into the precise exception.  The checks run in the order a
    reader expects (lengths before contents, inputs before outputs) on the arguments as they
    are now; if another thread changed them since, the code alone decides."""

    def __init__(self, aead: AesGcm, code: int, op: str):
        self.a, self.code, self.op = aead, code, op

    def _kernel(self) -> Exception:
        c = self.code
        if c == abi.RC_CONTEXT:
            return ValueError("this AesGcm was closed" if self.a._closed else
                              "the key context is not set up (key_init did not finish)")
        if c == abi.RC_BAD_TAG:
            where = {"decrypt": "", "decrypt_in_place": "; the buffer was wiped",
                     "decrypt_into": "; out was wiped", "stream": ""}[self.op]
            return InvalidTag("tag mismatch" + where)
        if c == abi.RC_EMPTY_NONCE:
            return ValueError("nonce must be at least 1 byte (12 bytes is GCM's fast path)")
        if c == abi.RC_TEXT_TOO_LONG:
            return OverflowError(f"data exceeds GCM's 2^36-32 = {MAX_PLAINTEXT} bytes")
        if c == abi.RC_AAD_TOO_LONG:
            return OverflowError("associated_data exceeds 2^61-1 bytes")
        if c == abi.RC_ORDER:
            return ValueError("associated data must come before the data")
        if c == codes.E_OVERLAP:
            return ValueError("an output overlaps an input; only exact in-place use is allowed")
        return ValueError(f"arguments refused ({abi.RETURN_CODES.get(c, c)})")

    @staticmethod
    def nonce(nonce: Any) -> Buf:
        b = view(nonce, "nonce")
        if b.n == 0:
            raise ValueError("nonce must be at least 1 byte (12 bytes is GCM's fast path)")
        return b

    @staticmethod
    def aad(aad: Any) -> Buf:
        if aad is None:
            return view(b"", "associated_data")
        check_lengths(0, nbytes(aad, "associated_data"))
        return view(aad, "associated_data")

    @staticmethod
    def tag(tag: Any) -> Buf:
        b = view(tag, "tag")
        if b.n != TAG:
            raise ValueError(f"tag must be {TAG} bytes, got {b.n}")
        return b

    @staticmethod
    def no_overlap(out: Buf, name: str, others: Sequence[tuple[str, Buf]]) -> None:
        for oname, o in others:
            if overlaps(out, o):
                raise ValueError(f"{name} overlaps {oname}; only exact in-place use is allowed")

    def one_shot(self, nonce: Any, data: Any, aad: Any) -> Exception:
        if self.code == codes.E_SHORT or self.op == "decrypt":
            n = nbytes(data, "data")
            if n < TAG:
                return InvalidTag(f"data is {n} bytes, shorter than the {TAG}-byte tag")
            check_lengths(n - TAG, 0)
        else:
            check_lengths(nbytes(data, "data"), 0)
        self.nonce(nonce), self.aad(aad), view(data, "data")
        return self._kernel()

    def in_place(self, nonce: Any, buf: Any, aad: Any, tag: Any = _NO_TAG) -> Exception:
        check_lengths(nbytes(buf, "buf"), 0)
        nb, ab = self.nonce(nonce), self.aad(aad)
        others = [("nonce", nb), ("associated_data", ab)]
        if tag is not _NO_TAG:
            others.append(("tag", self.tag(tag)))
        b = view(buf, "buf", writable=True)
        self.no_overlap(b, "buf", others)
        return self._kernel()

    def pieces(self, out: Any, nonce: Any, pieces: Sequence[Any], aad: Any) -> Exception:
        total = sum(nbytes(p, "data piece") for p in pieces)
        check_lengths(total, 0)
        if out is not None:
            on = nbytes(out, "out")
            if on < total:
                raise ValueError(f"out is {on} bytes, too small for {total} bytes of data")
        nb, ab = self.nonce(nonce), self.aad(aad)
        bufs = [view(p, "data piece") for p in pieces]
        if out is not None:
            ob = view(out, "out", writable=True)
            ob = Buf(ob.addr, total, ob.keep)
            pos = ob.addr
            for i, b in enumerate(bufs):
                if b.addr != pos:  # a piece exactly where its output goes is in place
                    self.no_overlap(ob, "out", [(f"piece {i}", b)])
                pos += b.n
            self.no_overlap(ob, "out", [("nonce", nb), ("associated_data", ab)])
        return self._kernel()

    def decrypt_into(self, out: Any, nonce: Any, data: Any, aad: Any, tag: Any) -> Exception:
        n = nbytes(data, "data")
        check_lengths(n, 0)
        if nbytes(out, "out") < n:
            raise ValueError(f"out is {nbytes(out, 'out')} bytes, too small for {n} bytes")
        nb, ab, tb = self.nonce(nonce), self.aad(aad), self.tag(tag)
        src, ob = view(data, "data"), view(out, "out", writable=True)
        if ob.addr != src.addr:
            self.no_overlap(Buf(ob.addr, n, ob.keep), "out", [("data", src)])
        self.no_overlap(Buf(ob.addr, n, ob.keep), "out",
                        [("nonce", nb), ("associated_data", ab), ("tag", tb)])
        return self._kernel()

    def update(self, data: Any, out: Any, length: int) -> Exception:
        n = nbytes(data, "data")
        check_lengths(length + n, 0)
        if out is not None:
            if nbytes(out, "out") < n:
                raise ValueError(f"out is too small for {n} bytes")
            src, ob = view(data, "data"), view(out, "out", writable=True)
            if ob.addr != src.addr:
                self.no_overlap(Buf(ob.addr, n, ob.keep), "out", [("data", src)])
        else:
            view(data, "data")
        return self._kernel()


class _Stream:
    _encrypt = True

    def __init__(self, aead: AesGcm, nonce: Any, associated_data: Any):
        self._a = aead
        self._holder = (ctypes.c_uint8 * (abi.STREAM_SIZE + 64))()
        self._st = (ctypes.addressof(self._holder) + 63) & ~63
        self._len = 0
        self._aad_len = 0
        self._done = False
        self._update_fn = aead._stream_enc if self._encrypt else aead._stream_dec
        nb = _Diagnose.nonce(nonce)
        self._rc(aead._f.stream_init(aead._ctx, self._st, nb.addr, nb.n))
        if associated_data is not None:
            self.authenticate_additional_data(associated_data)

    def _rc(self, rc: int) -> None:
        if rc != 0:
            raise _Diagnose(self._a, rc, "stream")._kernel()

    def __del__(self) -> None:  # the state holds E(J0) and the open block: wipe it
        holder = getattr(self, "_holder", None)
        if holder is not None:
            ctypes.memset(holder, 0, ctypes.sizeof(holder))

    def authenticate_additional_data(self, data: Any) -> None:
        """More AAD; only before the first update."""
        if self._done:
            raise ValueError("this stream is finished")
        b = view(data, "associated_data")
        check_lengths(0, self._aad_len + b.n)
        self._rc(self._a._f.stream_aad(self._a._ctx, self._st, b.addr, b.n))
        self._aad_len += b.n

    def update(self, data: Any) -> bytes:
        """The next chunk's output (as long as the chunk)."""
        if self._done:
            raise ValueError("this stream is finished")
        r = self._update_fn(self._holder, data, None)
        if r.__class__ is bytes:
            self._len += len(r)
            return r
        raise _Diagnose(self._a, r, "stream").update(data, None, self._len)

    def update_into(self, data: Any, out: Any) -> int:
        """The next chunk's output into ``out`` (at least as long, or ``data`` itself);
        returns the number of bytes written."""
        if self._done:
            raise ValueError("this stream is finished")
        r = self._update_fn(self._holder, data, out)
        if r >= 0:
            self._len += r
            return r
        raise _Diagnose(self._a, r, "stream").update(data, out, self._len)

    def _finish(self) -> bytes:
        if self._done:
            raise ValueError("this stream is finished")
        tag = ctypes.create_string_buffer(TAG)
        self._rc(self._a._f.stream_finish(self._a._ctx, self._st, tag))
        self._done = True
        ctypes.memset(self._holder, 0, ctypes.sizeof(self._holder))
        return tag.raw


class Encryptor(_Stream):
    """Streaming encryption: update(...) as often as needed, then finalize() -> tag."""

    def finalize(self) -> bytes:
        """The tag; the stream is finished."""
        return self._finish()


class Decryptor(_Stream):
    """Streaming decryption.  Plaintext from update() is unverified until finalize_with_tag()
    returns; callers must not act on it before then (as with any streaming AEAD)."""

    _encrypt = False

    def finalize_with_tag(self, tag: Any) -> None:
        """Check the tag (constant time); raises InvalidTag."""
        tb = _Diagnose.tag(tag)
        want = self._finish()
        if not hmac.compare_digest(want, bytes(memoryview(tb.keep[1]))):
            raise InvalidTag("tag mismatch")
