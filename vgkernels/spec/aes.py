"""AES (FIPS 197) block cipher, written to be read next to the standard.

The state is a 4x4 uint8 array indexed ``state[r, c]`` exactly as in FIPS 197 Section 3.4
(``state[r, c] = in[r + 4c]``); the key schedule is an array of words ``w[i]`` of 4 bytes
(Section 5.2).  Everything below `aes_encrypt_block` is compiled with numba so that the test
suites can push tens of thousands of blocks through this oracle.  It is a reference model: table
look-ups and data-dependent branches are fine here, constant time is not a goal.
"""

from __future__ import annotations

import numba
import numpy as np

Nb = 4  # number of columns (32-bit words) in the state; fixed for AES (Section 3.4)

# Nk (key length in words) -> Nr (number of rounds), Table 3 / Figure 4 of FIPS 197.
NR_FOR_NK = {4: 10, 6: 12, 8: 14}


# --- Section 4.2: multiplication in GF(2^8) modulo m(x) = x^8 + x^4 + x^3 + x + 1 -------------


def _xtime_py(b: int) -> int:
    # Section 4.2.1: multiplication by x is a left shift and a conditional XOR with {1b}.
    b <<= 1
    return (b ^ 0x1B) & 0xFF if b & 0x100 else b


def _gf256_mul_py(a: int, b: int) -> int:
    # Section 4.2: repeated xtime(), adding (XOR) the partial products for the set bits of b.
    p = 0
    while b:
        if b & 1:
            p ^= a
        a = _xtime_py(a)
        b >>= 1
    return p


def _gf256_inverse_py(b: int) -> int:
    # The multiplicative inverse is b^254 (b^255 = 1 for b != 0); {00} maps to itself (5.1.1).
    r = 1
    for _ in range(254):
        r = _gf256_mul_py(r, b)
    return r if b else 0


def _make_sbox() -> np.ndarray:
    """Section 5.1.1: S-box = affine transformation of the multiplicative inverse in GF(2^8).

    b'_i = b_i ^ b_(i+4)%8 ^ b_(i+5)%8 ^ b_(i+6)%8 ^ b_(i+7)%8 ^ c_i  with c = {63}.
    """
    sbox = np.zeros(256, dtype=np.uint8)
    for x in range(256):
        b = _gf256_inverse_py(x)
        s = 0
        for i in range(8):
            bit = (b >> i) ^ (b >> ((i + 4) % 8)) ^ (b >> ((i + 5) % 8))
            bit ^= (b >> ((i + 6) % 8)) ^ (b >> ((i + 7) % 8)) ^ (0x63 >> i)
            s |= (bit & 1) << i
        sbox[x] = s
    return sbox


SBOX = _make_sbox()


def _make_rcon() -> np.ndarray:
    # Section 5.2: Rcon[j] = [x^(j-1), {00}, {00}, {00}]; only the first byte is stored.
    # Index 0 is unused so the code can say Rcon[i/Nk] as the standard does.
    rcon = np.zeros(11, dtype=np.uint8)
    r = 1
    for j in range(1, 11):
        rcon[j] = r
        r = _xtime_py(r)
    return rcon


RCON = _make_rcon()


# --- compiled transformations ------------------------------------------------------------------


@numba.njit(cache=True)
def xtime(b):
    """Section 4.2.1: b * {02} in GF(2^8)."""
    b = np.int64(b) << 1
    if b & 0x100:
        b ^= 0x11B  # reduce by m(x) = {01}{1b}
    return b


@numba.njit(cache=True)
def sub_word(word):
    """Section 5.2: SubWord() applies the S-box to each byte of a 4-byte word."""
    out = np.empty(4, dtype=np.uint8)
    for i in range(4):
        out[i] = SBOX[word[i]]
    return out


@numba.njit(cache=True)
def rot_word(word):
    """Section 5.2: RotWord([a0, a1, a2, a3]) = [a1, a2, a3, a0]."""
    out = np.empty(4, dtype=np.uint8)
    for i in range(4):
        out[i] = word[(i + 1) % 4]
    return out


@numba.njit(cache=True)
def key_expansion(key):
    """Section 5.2, KeyExpansion(): the key schedule w[0 .. Nb*(Nr+1)-1] of 4-byte words."""
    nk = key.shape[0] // 4
    nr = nk + 6  # 10, 12 or 14 rounds (Figure 4)
    w = np.empty((Nb * (nr + 1), 4), dtype=np.uint8)
    # The first Nk words are the cipher key itself.
    for i in range(nk):
        for j in range(4):
            w[i, j] = key[4 * i + j]
    for i in range(nk, Nb * (nr + 1)):
        temp = w[i - 1].copy()
        if i % nk == 0:
            temp = sub_word(rot_word(temp))
            temp[0] ^= RCON[i // nk]
        elif nk > 6 and i % nk == 4:
            # AES-256 only: an extra SubWord() half-way through each Nk-word block.
            temp = sub_word(temp)
        for j in range(4):
            w[i, j] = w[i - nk, j] ^ temp[j]
    return w


@numba.njit(cache=True)
def sub_bytes(state):
    """Section 5.1.1, SubBytes(): every state byte through the S-box (in place)."""
    for r in range(4):
        for c in range(Nb):
            state[r, c] = SBOX[state[r, c]]


@numba.njit(cache=True)
def shift_rows(state):
    """Section 5.1.2, ShiftRows(): row r is rotated left by r bytes (in place)."""
    tmp = np.empty(Nb, dtype=np.uint8)
    for r in range(1, 4):
        for c in range(Nb):
            tmp[c] = state[r, (c + r) % Nb]  # s'[r,c] = s[r, (c + shift(r, Nb)) mod Nb]
        for c in range(Nb):
            state[r, c] = tmp[c]


@numba.njit(cache=True)
def mix_columns(state):
    """Section 5.1.3, MixColumns(): each column times a(x) = {03}x^3 + {01}x^2 + {01}x + {02}.

    Written as the matrix product of equation (5.6), with {03}s = xtime(s) ^ s.
    """
    for c in range(Nb):
        s0 = state[0, c]
        s1 = state[1, c]
        s2 = state[2, c]
        s3 = state[3, c]
        state[0, c] = xtime(s0) ^ (xtime(s1) ^ s1) ^ s2 ^ s3
        state[1, c] = s0 ^ xtime(s1) ^ (xtime(s2) ^ s2) ^ s3
        state[2, c] = s0 ^ s1 ^ xtime(s2) ^ (xtime(s3) ^ s3)
        state[3, c] = (xtime(s0) ^ s0) ^ s1 ^ s2 ^ xtime(s3)


@numba.njit(cache=True)
def add_round_key(state, w, rnd):
    """Section 5.1.4, AddRoundKey(): column c is XORed with word w[round*Nb + c] (in place)."""
    for c in range(Nb):
        for r in range(4):
            state[r, c] ^= w[rnd * Nb + c, r]


@numba.njit(cache=True)
def cipher(inp, w):
    """Section 5.1, Cipher(in, Nr, w): encrypt one 16-byte block with the key schedule w."""
    nr = w.shape[0] // Nb - 1
    state = np.empty((4, Nb), dtype=np.uint8)
    for r in range(4):
        for c in range(Nb):
            state[r, c] = inp[r + 4 * c]  # state <- in  (Section 3.4)
    add_round_key(state, w, 0)
    for rnd in range(1, nr):
        sub_bytes(state)
        shift_rows(state)
        mix_columns(state)
        add_round_key(state, w, rnd)
    # The final round has no MixColumns().
    sub_bytes(state)
    shift_rows(state)
    add_round_key(state, w, nr)
    out = np.empty(16, dtype=np.uint8)
    for r in range(4):
        for c in range(Nb):
            out[r + 4 * c] = state[r, c]  # out <- state
    return out


# --- public, bytes-in / bytes-out API ----------------------------------------------------------


def as_u8(data: bytes) -> np.ndarray:
    """A writable uint8 copy of a bytes-like object (read-only arrays would make numba compile a
    second specialisation of every kernel)."""
    return np.frombuffer(memoryview(data), dtype=np.uint8).copy()


def check_key(key: bytes) -> np.ndarray:
    """The key as uint8, rejecting lengths other than 128, 192 and 256 bits."""
    if len(key) not in (16, 24, 32):
        raise ValueError(f"AES key must be 16, 24 or 32 bytes, got {len(key)}")
    return as_u8(key)


def expand_key(key: bytes) -> np.ndarray:
    """KeyExpansion() of a bytes key: the (Nb*(Nr+1), 4) uint8 word array."""
    return key_expansion(check_key(key))


def aes_encrypt_block(key: bytes, block: bytes) -> bytes:
    """CIPH_K(block) for a 16-, 24- or 32-byte key and one 16-byte block."""
    if len(block) != 16:
        raise ValueError(f"AES block must be 16 bytes, got {len(block)}")
    return cipher(as_u8(block), expand_key(key)).tobytes()
