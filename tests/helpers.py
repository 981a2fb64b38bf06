"""Shared helpers for the kernel / API / guard-page tests (not a test module).

Everything here is deterministic given a seed, so a failing case can be re-run from the values
an assertion message prints.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import mmap
import random
from collections.abc import Sequence
from typing import Any

from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from vgkernels import abi, spec
from vgkernels.backends import BACKENDS
from vgkernels.build import kernels
from vgkernels.variant import Variant

BACKEND_NAMES: list[str] = [b.name for b in BACKENDS]
BY_NAME = {b.name: b for b in BACKENDS}
KEY_SIZES = (16, 24, 32)
TAG = 16
# Backends swept with every partial size 1..15 at every block count; others are sampled.
FULL_PARTIAL_SWEEP = ("vaes_avx512", "aesni_pclmul_avx")
# cryptography's AESGCM accepts nonces of 8..128 bytes only.
AESGCM_NONCES = range(8, 129)


def rng(*seed: object) -> random.Random:
    """A Random seeded from readable parts (str seeds are stable across runs)."""
    return random.Random("/".join(map(str, seed)))


def rbytes(r: random.Random, n: int) -> bytes:
    return r.randbytes(n)


def ref(key: bytes, nonce: bytes, pt: bytes, aad: bytes | None = b"") -> bytes:
    """ciphertext || tag from the reference model."""
    ct, tag = spec.seal(bytes(key), bytes(nonce), bytes(pt), bytes(aad or b""))
    return ct + tag


def oracle(key: bytes, nonce: bytes, pt: bytes, aad: bytes | None = b"") -> bytes:
    """ciphertext || tag from `cryptography` where it accepts the nonce, else the spec."""
    if len(nonce) in AESGCM_NONCES:
        return AESGCM(bytes(key)).encrypt(bytes(nonce), bytes(pt), bytes(aad or b"") or None)
    return ref(key, nonce, pt, aad)


def flip(data: bytes, bit: int) -> bytes:
    """data with bit number `bit` (mod 8*len) inverted."""
    b = bytearray(data)
    bit %= 8 * len(b)
    b[bit // 8] ^= 1 << (bit % 8)
    return bytes(b)


def partials_for(backend: str, nblocks: int, extra: int = 2) -> list[int]:
    """Partial-block sizes to test at a block count: all of 0..15 on the full-sweep backends,
    else 0 plus `extra` sizes rotating with the count so every size 1..15 still appears."""
    if backend in FULL_PARTIAL_SWEEP:
        return list(range(16))
    return [0] + sorted({(nblocks * 7 + 5 * j) % 15 + 1 for j in range(extra)})


def nonce_len_for(i: int) -> int:
    """12 most of the time (GCM's fast path), other lengths (1..64) every third case."""
    return 12 if i % 3 else (i * 11) % 64 + 1


def variants_of(name: str, *, every: bool = True) -> list[Variant]:
    """Variants of a backend: tail in {full, split} x each group x stitch_min at both ends of
    [group, 2*group] (`every`), or a strength-2 covering array of those three factors: each
    group with both tails and both stitch_min ends, and every (tail, stitch_min) pair."""
    be = BY_NAME[name]
    out = []
    for i, g in enumerate(be.groups):
        for tail in ("full", "split"):
            for sm in (g, 2 * g):
                if every or ((tail == "full") == (sm == g)) == (i % 2 == 0):
                    out.append(Variant(tail=tail, group=g, stitch_min=sm))
    return out


def engine_variants(name: str) -> list[Variant]:
    """The loop-engine options: the GHASH multiply flipped from the backend's default with the
    deepest skew (next group's AES rounds begun early), and a middling skew; default tail and
    group, smallest group for the second so group and skew interact."""
    be = BY_NAME[name]
    return [Variant(karatsuba=not be.karatsuba_for(), skew=9),
            Variant(group=min(be.groups), karatsuba=be.karatsuba_for(), skew=3)]


def variant_id(v: Variant) -> str:
    extra = ""
    if v.karatsuba is not None:
        extra += "-kara" if v.karatsuba else "-schoolbook"
    if v.skew is not None:
        extra += f"-skew{v.skew}"
    return f"{v.tail}-g{v.group or 'dflt'}-s{v.stitch_min or 'dflt'}{extra}"


# -- the C ABI through ctypes ---------------------------------------------------------------------


def bind(backend: str, op: str, variant: Variant | None = None, sig: Any = None) -> Any:
    """ctypes function of one exported op of a backend's kernels (abi.SIGNATURES unless
    `sig` is given)."""
    return bind_at(kernels(backend, variant).address(op), op, sig)


def bind_at(address: int, op: str, sig: Any = None) -> Any:
    """ctypes function of the exported op at ``address`` (abi.SIGNATURES unless `sig`)."""
    restype, argtypes, _ = sig or abi.SIGNATURES[op]
    return ctypes.CFUNCTYPE(restype, *argtypes)(address)


def addr_of(buf: Any) -> int:
    """Address of a writable or read-only contiguous buffer (bytes included)."""
    import numpy as np

    mv = memoryview(buf)
    if mv.nbytes == 0:
        return 0
    arr = np.frombuffer(mv.cast("B") if mv.format != "B" or mv.ndim != 1 else mv, np.uint8)
    return int(arr.ctypes.data)


def pieces_array(pieces: Sequence[tuple[int, int]]) -> Any:
    arr = (abi.Piece * max(len(pieces), 1))()
    for i, (p, n) in enumerate(pieces):
        arr[i].ptr = p
        arr[i].len = n
    return arr


# -- guard pages ----------------------------------------------------------------------------------

PAGE = mmap.PAGESIZE
PROT_NONE = 0
_libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
_libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
_libc.mprotect.restype = ctypes.c_int


def _mprotect(addr: int, n: int, prot: int) -> None:
    if _libc.mprotect(addr, n, prot) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"mprotect({addr:#x}, {n}, {prot}) failed")


class GuardedSlots:
    """`count` slots, each ``[PROT_NONE page][data pages][PROT_NONE page]``, in one mapping.

    ``end(i, n)`` is a writable memoryview of n bytes whose last byte is the last byte before
    slot i's trailing guard page; ``start(i, n)`` begins on the first byte after its leading
    guard page.  Any kernel access past either end faults (SIGSEGV).
    """

    def __init__(self, count: int, data_pages: int = 1):
        self.count, self.data = count, data_pages * PAGE
        self.stride = self.data + PAGE
        self.size = PAGE + count * self.stride
        self.mm = mmap.mmap(-1, self.size, prot=mmap.PROT_READ | mmap.PROT_WRITE)
        c = ctypes.c_char.from_buffer(self.mm)
        self.base = ctypes.addressof(c)
        del c
        assert self.base % PAGE == 0
        self.mv = memoryview(self.mm)
        for i in range(count + 1):
            _mprotect(self.base + i * self.stride, PAGE, PROT_NONE)

    def data_start(self, i: int) -> int:
        """Offset (in the mapping) of slot i's first data byte."""
        return PAGE + i * self.stride

    def end(self, i: int, n: int) -> memoryview:
        assert 0 <= n <= self.data
        stop = self.data_start(i) + self.data
        return self.mv[stop - n:stop]

    def start(self, i: int, n: int) -> memoryview:
        assert 0 <= n <= self.data
        s = self.data_start(i)
        return self.mv[s:s + n]

    def put(self, where: str, i: int, data: bytes) -> memoryview:
        v = self.end(i, len(data)) if where == "end" else self.start(i, len(data))
        v[:] = data
        return v

    def guard_addr(self, i: int) -> int:
        """Address of the guard page after slot i (a pointer nothing may dereference)."""
        return self.base + self.data_start(i) + self.data

    def close(self) -> None:
        for i in range(self.count + 1):
            _mprotect(self.base + i * self.stride, PAGE, mmap.PROT_READ | mmap.PROT_WRITE)
        self.mv.release()
        self.mm.close()


# -- GF(2^128) helpers: a nonce whose pre-counter block J0 is chosen ------------------------------

GF_ONE = b"\x80" + bytes(15)  # 1 in GCM's bit-reflected representation


def gf_inv(x: bytes) -> bytes:
    """x^-1 = x^(2^128 - 2): the product of x^(2^i) for i = 1..127."""
    acc, s = GF_ONE, x
    for _ in range(127):
        s = spec.gf_mult(s, s)
        acc = spec.gf_mult(acc, s)
    return acc


def nonce_for_j0(key: bytes, j0: bytes) -> bytes:
    """A 16-byte nonce whose J0 = GHASH_H(IV || [0]_64 || [128]_64) is `j0`:
    IV = ((J0 * H^-1) ^ L) * H^-1 with L the length block.  Lets a test put the 32-bit
    counter just below its wrap."""
    h_inv = gf_inv(spec.hash_subkey(key))
    length = (128).to_bytes(16, "big")
    t = bytes(a ^ b for a, b in zip(spec.gf_mult(j0, h_inv), length, strict=True))
    return spec.gf_mult(t, h_inv)


def inc32(block: bytes, k: int = 1) -> bytes:
    return block[:12] + ((int.from_bytes(block[12:], "big") + k) % 2**32).to_bytes(4, "big")
