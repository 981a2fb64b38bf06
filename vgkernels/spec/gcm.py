"""GCM (NIST SP 800-38D) on top of the FIPS 197 model: inc32, GCTR, J0, seal and open.

Kernels take the AES key schedule ``w`` (from `aes.key_expansion`) and uint8 arrays; the
public functions at the bottom take and return bytes.  Only the full 128-bit tag is produced
(t = 128 in Algorithm 4).
"""

from __future__ import annotations

import numba
import numpy as np

from ..abi import MAX_AAD, MAX_PLAINTEXT
from .aes import as_u8, check_key, cipher, expand_key, key_expansion
from .ghash import _ghash_update

# Section 5.2.1.1: len(P) <= 2^39 - 256 bits; len(A), len(IV) <= 2^64 - 1 bits.  The text and
# AAD limits are defined once, in `vgkernels.abi` (the kernels' return codes are made of them).
MAX_IV_BYTES = (2**64 - 1) // 8


class InvalidTag(Exception):
    """Algorithm 5 step 8 returned FAIL: the tag does not authenticate ciphertext and AAD."""


@numba.njit(cache=True)
def inc32(x):
    """Section 6.2, inc_32(X): the rightmost 32 bits, as an integer, plus one mod 2^32.

    The leftmost 96 bits are copied unchanged -- the counter never carries into them.
    """
    y = x.copy()
    for j in range(15, 11, -1):
        y[j] = (x[j] + 1) & 0xFF
        if y[j] != 0:
            break  # no carry out of this byte
    return y


@numba.njit(cache=True)
def gctr(w, icb, x):
    """Algorithm 3 (Section 6.5): GCTR_K(ICB, X), CTR mode with the inc_32 counter."""
    n = x.shape[0]
    y = np.empty(n, dtype=np.uint8)
    # Steps 1-2: an empty X gives an empty Y.
    cb = icb.copy()  # Step 4: CB_1 = ICB
    for start in range(0, n, 16):
        # Steps 6-7: Y_i = X_i xor CIPH_K(CB_i); for the final partial block X_n*,
        # Y_n* = X_n* xor MSB_len(X_n*)(CIPH_K(CB_n)).
        ks = cipher(cb, w)
        for j in range(min(16, n - start)):
            y[start + j] = x[start + j] ^ ks[j]
        cb = inc32(cb)  # Step 5: CB_i = inc_32(CB_{i-1})
    return y


@numba.njit(cache=True)
def derive_j0(h, iv):
    """Algorithm 4 step 2: the pre-counter block J0.

    len(IV) = 96 bits: J0 = IV || 0^31 || 1.
    otherwise:         J0 = GHASH_H(IV || 0^(s+64) || [len(IV)]_64), s = 128*ceil(len(IV)/128)
                       - len(IV).
    """
    j0 = np.zeros(16, dtype=np.uint8)
    n = iv.shape[0]
    if n == 12:
        j0[:12] = iv
        j0[15] = 1
        return j0
    _ghash_update(j0, h, iv)  # IV || 0^s (the partial-block padding)
    len_block = np.zeros(16, dtype=np.uint8)  # 0^64 || [len(IV)]_64
    _put_u64_be(len_block, 8, n * 8)
    _ghash_update(j0, h, len_block)
    return j0


@numba.njit(cache=True)
def _put_u64_be(buf, offset, value):
    # [x]_64: the 64-bit big-endian encoding of a non-negative integer (Section 4, "[x]_s").
    for j in range(8):
        buf[offset + 7 - j] = (value >> (8 * j)) & 0xFF


@numba.njit(cache=True)
def _tag_input_hash(h, a, c):
    """Algorithm 4 step 5: S = GHASH_H(A || 0^v || C || 0^u || [len(A)]_64 || [len(C)]_64)."""
    s = np.zeros(16, dtype=np.uint8)
    _ghash_update(s, h, a)
    _ghash_update(s, h, c)
    len_block = np.zeros(16, dtype=np.uint8)
    _put_u64_be(len_block, 0, a.shape[0] * 8)
    _put_u64_be(len_block, 8, c.shape[0] * 8)
    _ghash_update(s, h, len_block)
    return s


@numba.njit(cache=True)
def gcm_seal(w, iv, p, a):
    """Algorithm 4 (Section 7.1): GCM-AE_K(IV, P, A) = (C, T) with t = 128."""
    h = cipher(np.zeros(16, dtype=np.uint8), w)  # Step 1: H = CIPH_K(0^128)
    j0 = derive_j0(h, iv)  # Step 2
    c = gctr(w, inc32(j0), p)  # Step 3: C = GCTR_K(inc_32(J0), P)
    s = _tag_input_hash(h, a, c)  # Steps 4-5
    t = gctr(w, j0, s)  # Step 6: T = MSB_t(GCTR_K(J0, S)), t = 128
    return c, t


@numba.njit(cache=True)
def gcm_open(w, iv, c, a, t):
    """Algorithm 5 (Section 7.2): GCM-AD_K(IV, C, A, T) -> (P, ok).

    P is only meaningful when ok; the caller must not release it otherwise (step 8).
    """
    h = cipher(np.zeros(16, dtype=np.uint8), w)  # Step 2: H = CIPH_K(0^128)
    j0 = derive_j0(h, iv)  # Step 3
    p = gctr(w, inc32(j0), c)  # Step 4: P = GCTR_K(inc_32(J0), C)
    s = _tag_input_hash(h, a, c)  # Steps 5-6
    t_prime = gctr(w, j0, s)  # Step 7: T' = MSB_t(GCTR_K(J0, S))
    # Step 8: compare all of T with T'.  Accumulating the difference instead of returning at
    # the first mismatch is not needed by an oracle, but costs nothing.
    diff = 0
    for j in range(16):
        diff |= t[j] ^ t_prime[j]
    return p, diff == 0


# --- public, bytes-in / bytes-out API ----------------------------------------------------------


def _check_iv_aad(nonce: bytes, aad: bytes) -> None:
    # Section 5.2.1.1: 1 <= len(IV) <= 2^64 - 1 bits (here whole bytes), len(A) <= 2^64 - 1 bits.
    if not 1 <= len(nonce) <= MAX_IV_BYTES:
        raise ValueError("GCM nonce must be at least 1 byte long")
    if len(aad) > MAX_AAD:
        raise ValueError("AAD too long for GCM")


def hash_subkey(key: bytes) -> bytes:
    """H = CIPH_K(0^128), the GHASH key (Algorithm 4 step 1)."""
    return cipher(np.zeros(16, dtype=np.uint8), expand_key(key)).tobytes()


def ctr32(key: bytes, counter_block: bytes, data: bytes) -> bytes:
    """GCTR_K(counter_block, data): CTR mode whose counter is the low 32 bits, wrapping mod 2^32."""
    if len(counter_block) != 16:
        raise ValueError("counter block must be 16 bytes")
    return gctr(expand_key(key), as_u8(counter_block), as_u8(data)).tobytes()


def seal(key: bytes, nonce: bytes, plaintext: bytes, aad: bytes = b"") -> tuple[bytes, bytes]:
    """AES-GCM authenticated encryption: returns (ciphertext, 16-byte tag)."""
    w = key_expansion(check_key(key))
    _check_iv_aad(nonce, aad)
    if len(plaintext) > MAX_PLAINTEXT:
        raise ValueError("plaintext too long for GCM")
    c, t = gcm_seal(w, as_u8(nonce), as_u8(plaintext), as_u8(aad))
    return c.tobytes(), t.tobytes()


def open(  # shadows the builtin inside this module only; mirrors AEAD seal/open naming
    key: bytes, nonce: bytes, ciphertext: bytes, aad: bytes, tag: bytes
) -> bytes:
    """AES-GCM authenticated decryption; raises `InvalidTag` if the 16-byte tag does not verify."""
    w = key_expansion(check_key(key))
    _check_iv_aad(nonce, aad)
    if len(tag) != 16:
        raise ValueError(f"the reference model checks full 16-byte tags, got {len(tag)} bytes")
    if len(ciphertext) > MAX_PLAINTEXT:
        raise InvalidTag("ciphertext too long for GCM")  # Algorithm 5 step 1: return FAIL
    p, ok = gcm_open(w, as_u8(nonce), as_u8(ciphertext), as_u8(aad), as_u8(tag))
    if not ok:
        raise InvalidTag("GCM tag mismatch")
    return p.tobytes()
