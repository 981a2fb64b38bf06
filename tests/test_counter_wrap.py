"""Counters: the 32-bit counter wraps without touching the other 96 bits, and the big-endian
fast path of the stitched loop hands over to the byte-swapped path whenever the low byte
would carry.  Driven through the inner kernels with chosen counter blocks, on every backend."""

from __future__ import annotations

import ctypes
import os

import pytest

from vgkernels import abi, spec
from vgkernels.backends import BACKENDS, availability
from vgkernels.build import kernels
from vgkernels.variant import Variant


def _fn(k, op):
    restype, argtypes, _ = abi.SIGNATURES[op]
    return ctypes.CFUNCTYPE(restype, *argtypes)(k.address(op))


def _ctx(k, key: bytes):
    raw = (ctypes.c_uint8 * (abi.CTX_SIZE + 64))()
    ctx = (ctypes.addressof(raw) + 63) & ~63
    assert _fn(k, "key_init")(ctx, key, len(key)) == 0
    return raw, ctx


# low 32 bits of the first counter: wraps at 2^32, and low bytes that carry at every offset
STARTS = [0xFFFFFFF0, 0xFFFFFFFF, 0xFFFFFF00 - 3, 0x000000F9, 0x12345680 - 17, 0x0000FFF0]


@pytest.mark.parametrize("backend", [b.name for b in BACKENDS])
def test_counter_wrap_and_carry(backend):
    why = availability()[backend]
    if why is not None:
        pytest.skip(f"{backend}: {why}")
    be = next(b for b in BACKENDS if b.name == backend)
    variants = [Variant()] + ([Variant(skew=0, karatsuba=False)] if be.skew else [])
    for v in variants:
        k = kernels(backend, v)
        g = k.variant.group
        key = os.urandom(32)
        raw, ctx = _ctx(k, key)
        enc_blocks, ctr32 = _fn(k, "encrypt_blocks"), _fn(k, "ctr32")
        h = spec.hash_subkey(key)
        nblocks = [1, g - 1, 2 * g + 3, 5 * g + 1] if backend != "portable" else [1, 9]
        for start in STARTS:
            for nb in nblocks:
                prefix = os.urandom(12)
                counter = prefix + start.to_bytes(4, "big")
                pt = os.urandom(16 * nb)
                want = spec.ctr32(key, counter, pt)
                cbuf = ctypes.create_string_buffer(counter, 16)
                y = ctypes.create_string_buffer(16)
                out = ctypes.create_string_buffer(16 * nb)
                enc_blocks(ctx, y, cbuf, pt, out, 16 * nb)
                assert out.raw == want, (v.tag(), hex(start), nb)
                assert y.raw == spec.ghash(h, want), (v.tag(), hex(start), nb)
                nxt = prefix + ((start + nb) % 2**32).to_bytes(4, "big")
                assert cbuf.raw == nxt, "the counter block must advance by inc32 only"
                cbuf = ctypes.create_string_buffer(counter, 16)
                out2 = ctypes.create_string_buffer(16 * nb)
                ctr32(ctx, cbuf, pt, out2, nb)
                assert out2.raw == want and cbuf.raw == nxt
        del raw
