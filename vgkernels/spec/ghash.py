"""GF(2^128) multiplication and GHASH, NIST SP 800-38D Sections 6.3 and 6.4.

Blocks are 16-byte uint8 arrays in the standard's bit order: bit 0 of a block is the most
significant bit of byte 0, and bit i stands for the coefficient of x^i.  Inside `_gf_mult` the
two operands are held as two big-endian 64-bit halves so that Algorithm 1's 128 iterations are a
handful of integer operations each; the algorithm itself is unchanged.

The compiled kernels carry a leading underscore only because the plain names `gf_mult` and
`ghash` belong to the bytes-level public API at the bottom of this module.
"""

from __future__ import annotations

import numba
import numpy as np

from .aes import as_u8

# R = 11100001 || 0^120 (Section 6.3), as the high 64-bit half; the low half of R is zero.
R_HI = np.uint64(0xE1 << 56)

_U1 = np.uint64(1)  # numba: keep every operand uint64 (uint64 op int64 would give float64)
_U8 = np.uint64(8)
_U63 = np.uint64(63)
_U255 = np.uint64(255)


@numba.njit(cache=True)
def _load_halves(x):
    # Bytes 0..7 are the high half: the standard's bit 0 lands on bit 63 of `hi`.
    hi = np.uint64(0)
    lo = np.uint64(0)
    for j in range(8):
        hi = (hi << _U8) | np.uint64(x[j])
        lo = (lo << _U8) | np.uint64(x[8 + j])
    return hi, lo


@numba.njit(cache=True)
def _store_halves(hi, lo, out):
    for j in range(7, -1, -1):
        out[j] = hi & _U255
        out[8 + j] = lo & _U255
        hi >>= _U8
        lo >>= _U8


@numba.njit(cache=True)
def _gf_mult(x, y):
    """Algorithm 1 (Section 6.3): Z = X * Y in GF(2^128); returns a new 16-byte block."""
    x_hi, x_lo = _load_halves(x)
    # Step 2: Z_0 = 0^128, V_0 = Y.
    z_hi = np.uint64(0)
    z_lo = np.uint64(0)
    v_hi, v_lo = _load_halves(y)
    for i in range(128):
        # Step 3: x_i is bit i of X, counting from the leftmost (most significant) bit.
        if i < 64:
            x_i = (x_hi >> np.uint64(63 - i)) & _U1
        else:
            x_i = (x_lo >> np.uint64(127 - i)) & _U1
        # Z_{i+1} = Z_i if x_i = 0, else Z_i xor V_i.
        if x_i:
            z_hi ^= v_hi
            z_lo ^= v_lo
        # V_{i+1} = V_i >> 1 if LSB_1(V_i) = 0, else (V_i >> 1) xor R.
        lsb = v_lo & _U1
        v_lo = (v_lo >> _U1) | (v_hi << _U63)
        v_hi = v_hi >> _U1
        if lsb:
            v_hi ^= R_HI
    # Step 4: return Z_128.
    z = np.empty(16, dtype=np.uint8)
    _store_halves(z_hi, z_lo, z)
    return z


@numba.njit(cache=True)
def _ghash_update(y, h, x):
    """Algorithm 2 steps 2-3, continued from the running value Y (updated in place).

    X is split into 16-byte blocks X_1 .. X_m and Y_i = (Y_{i-1} xor X_i) * H.  A final partial
    block is zero-padded on the right, which is exactly the 0^v / 0^u padding of Algorithm 4
    step 5 -- it lets GCM hash A and C where they lie instead of building A || 0^v || C || ...
    """
    n = x.shape[0]
    blk = np.zeros(16, dtype=np.uint8)
    for start in range(0, n, 16):
        for j in range(16):
            blk[j] = x[start + j] if start + j < n else 0
        for j in range(16):
            blk[j] ^= y[j]
        prod = _gf_mult(blk, h)
        for j in range(16):
            y[j] = prod[j]


@numba.njit(cache=True)
def _ghash(h, x):
    """Algorithm 2 (Section 6.4): GHASH_H(X) for X of 16*m bytes; Y_0 = 0^128."""
    y = np.zeros(16, dtype=np.uint8)
    _ghash_update(y, h, x)
    return y


# --- public, bytes-in / bytes-out API ----------------------------------------------------------


def gf_mult(x: bytes, y: bytes) -> bytes:
    """X * Y in GCM's GF(2^128) (SP 800-38D Algorithm 1) for two 16-byte blocks."""
    if len(x) != 16 or len(y) != 16:
        raise ValueError("gf_mult operands must be 16-byte blocks")
    return _gf_mult(as_u8(x), as_u8(y)).tobytes()


def ghash(h: bytes, data: bytes) -> bytes:
    """GHASH_H(data) (SP 800-38D Algorithm 2); data must be a whole number of 16-byte blocks."""
    if len(h) != 16:
        raise ValueError("the hash subkey H must be 16 bytes")
    if len(data) % 16:
        raise ValueError(f"GHASH input must be a multiple of 16 bytes, got {len(data)}")
    return _ghash(as_u8(h), as_u8(data)).tobytes()
