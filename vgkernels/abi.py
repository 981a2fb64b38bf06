"""The C ABI every backend exports: context layout, function names and signatures.

One source of truth for the IR generators (which lay the context out), the ctypes binding in
`vgkernels.api`, the timing driver and the AOT header.  Function names are
``vg_<backend>_<op>`` (``vg_<backend>_<variant>_<op>`` for non-default variants).
"""

from __future__ import annotations

import ctypes

# Context layout (bytes).  64-byte aligned; opaque to callers, documented for readers.
CTX_ROUND_KEYS = 0  # 15 round keys of 16 bytes, in the byte order AESENC takes them
CTX_NROUNDS = 240  # u32: 10, 12 or 14
CTX_KEY_LEN = 244  # u32: 16, 24 or 32
CTX_MAGIC = 248  # u32: CTX_MAGIC_VALUE once key_init has finished; anything else fails closed
CTX_INFLIGHT = 252  # u32: calls in flight, kept by the Python binding (C callers ignore it)
CTX_MAGIC_VALUE = 0x31474756  # "VGG1"
CTX_POWERS = 256  # powers of H, highest first, ending with H^1, then zero padding
# Room for powers H^72 .. H^1.  The bulk functions need H^(2G+1) at most (a leftover chunk is
# fewer than 2G whole blocks, then the partial block and the length block): 65 for the widest
# group, G = 32.  kernels/bulk.py asserts this for every group it builds.
CTX_NPOW = 72
CTX_POWER_PAD = 4  # zero blocks after H^1 so a partial vector of powers loads whole (W - 1 <= 4)
# The first AES round of a counter block by its last byte (backends with `first_round`):
# entry v is AESENC(K0 ^ v*e15, 0) ^ AESENC(K0, 0), so a block x whose last byte is v has
# round 1 AESENC(x ^ K0, K1) = AESENC(x0 ^ K0, K1) ^ entry v, x0 being x with its last byte
# zero (SubBytes is bytewise, ShiftRows and MixColumns are linear).  key_init writes it; the
# stitched loops and the short path's chunks read it, indexed by the public counter.
CTX_ROUND1 = CTX_POWERS + 16 * (CTX_NPOW + CTX_POWER_PAD)  # 1472: 256 blocks
# The four-lane loops' powers H^4, H^8, .., H^32 (the group of 32 blocks' vector k takes
# H^(32-4k)), each in all four lanes of a 64-byte entry, then their Karatsuba half-sums the
# same way (backends with `masked`: zmm).  key_init writes them; the bulk functions read them
# where a multiply uses them, as memory operands, so they need not hold them in registers or
# store them to the stack first (design notes, "Zen 4, fourteenth session").
CTX_BCAST = CTX_ROUND1 + 16 * 256  # 5568
CTX_NBCAST = 8
CTX_SIZE = CTX_BCAST + 2 * 64 * CTX_NBCAST  # 6592
CTX_ALIGN = 64


def power_offset(k: int) -> int:
    """Byte offset of H^k (k = 1..CTX_NPOW) in the context; H^1 sits last before the padding."""
    return CTX_POWERS + 16 * (CTX_NPOW - k)


def bcast_offset(e: int, folded: bool = False) -> int:
    """Byte offset of H^e (e = 4, 8, .., 4 * CTX_NBCAST) in four lanes, or of its half-sum."""
    if e % 4 or not 4 <= e <= 4 * CTX_NBCAST:
        raise ValueError(f"no broadcast entry for H^{e}")
    return CTX_BCAST + 64 * (e // 4 - 1 + (CTX_NBCAST if folded else 0))


# GCM's length limits (SP 800-38D section 5.2.1.1), as the kernels enforce them: RC_TEXT_TOO_LONG
# and RC_AAD_TOO_LONG are defined by them.  The one definition: the kernels, the binding, the API
# and the oracle in `vgkernels.spec` read them from here (this module imports nothing heavy).
MAX_PLAINTEXT = (2**39 - 256) // 8  # len(P) <= 2^39 - 256 bits: 2^36 - 32 bytes
MAX_AAD = (2**64 - 1) // 8  # len(A) <= 2^64 - 1 bits: 2^61 - 1 bytes

# Return codes of every entry (0 is success).  The one list: the header, the API and the
# binding read it from here.
RC_OK = 0
RC_BAD_TAG = -1  # open: the tag did not verify; the output was wiped
RC_EMPTY_NONCE = -2
RC_TEXT_TOO_LONG = -3  # more than 2^36 - 32 bytes
RC_AAD_TOO_LONG = -4  # more than 2^61 - 1 bytes
RC_TAG_LENGTH = -5  # open: tag length outside 4..16
RC_ORDER = -6  # streaming: a call out of order
RC_SHAPE = -7  # seal_two_slice: the shape does not qualify; fall back to seal_gather
RC_CONTEXT = -8  # the key context was never set up, its key_init failed, or it was wiped
RETURN_CODES: dict[int, str] = {
    RC_OK: "ok",
    RC_BAD_TAG: "wrong tag (output wiped)",
    RC_EMPTY_NONCE: "empty nonce",
    RC_TEXT_TOO_LONG: "text too long",
    RC_AAD_TOO_LONG: "AAD too long",
    RC_TAG_LENGTH: "tag length outside 4..16",
    RC_ORDER: "streaming call out of order",
    RC_SHAPE: "two-slice shape not taken (fall back to seal_gather)",
    RC_CONTEXT: "key context not set up or wiped (nothing was read or written)",
}

# key_init alone: a key length other than 16, 24 or 32 (shares -1 with RC_BAD_TAG, which only
# open returns; not one of the RC_ codes the header lists).
KEY_INIT_BAD_LENGTH = -1

# Streaming state (init / aad / update / finish), separate from the key context.
STREAM_SIZE = 128


class Piece(ctypes.Structure):
    """One input piece of a gather: ``struct vg_piece { const uint8_t *ptr; size_t len; }``."""

    _fields_ = [("ptr", ctypes.c_void_p), ("len", ctypes.c_size_t)]


P = ctypes.c_void_p
Z = ctypes.c_size_t
INT = ctypes.c_int

# op -> (restype, argtypes, C prototype tail).  Order matters: it is the header's order.
SIGNATURES: dict[str, tuple[object, list[object], str]] = {
    "key_init": (
        INT, [P, P, Z], "(void *ctx, const uint8_t *key, size_t key_len)"),
    "seal": (
        INT,
        [P, P, Z, P, Z, P, Z, P],
        "(const void *ctx, const uint8_t *nonce, size_t nonce_len, const uint8_t *aad, "
        "size_t aad_len, uint8_t *inout, size_t len, uint8_t tag[16])",
    ),
    "seal_out": (
        INT,
        [P, P, Z, P, Z, P, P, Z, P],
        "(const void *ctx, const uint8_t *nonce, size_t nonce_len, const uint8_t *aad, "
        "size_t aad_len, const uint8_t *in, uint8_t *out, size_t len, uint8_t tag[16])",
    ),
    "seal_gather": (
        INT,
        [P, P, Z, P, Z, P, Z, P, P],
        "(const void *ctx, const uint8_t *nonce, size_t nonce_len, const uint8_t *aad, "
        "size_t aad_len, const struct vg_piece *pieces, size_t n_pieces, uint8_t *out, "
        "uint8_t tag[16])",
    ),
    "open": (
        INT,
        [P, P, Z, P, Z, P, Z, P, Z],
        "(const void *ctx, const uint8_t *nonce, size_t nonce_len, const uint8_t *aad, "
        "size_t aad_len, uint8_t *inout, size_t len, const uint8_t *tag, size_t tag_len)",
    ),
    "open_out": (
        INT,
        [P, P, Z, P, Z, P, P, Z, P, Z],
        "(const void *ctx, const uint8_t *nonce, size_t nonce_len, const uint8_t *aad, "
        "size_t aad_len, const uint8_t *in, uint8_t *out, size_t len, const uint8_t *tag, "
        "size_t tag_len)",
    ),
    # Inner kernels, for cost models and for the split tail strategy.  Their counter block is
    # public, like a nonce: it decides the counter fast path (kernels/bulk.py).
    "ctr32": (
        INT,
        [P, P, P, P, Z],
        "(const void *ctx, uint8_t counter[16], const uint8_t *in, uint8_t *out, "
        "size_t nblocks)",
    ),
    "ghash": (
        INT,
        [P, P, P, Z],
        "(const void *ctx, uint8_t y[16], const uint8_t *blocks, size_t nblocks)",
    ),
    "encrypt_blocks": (
        INT,
        [P, P, P, P, P, Z],
        "(const void *ctx, uint8_t y[16], uint8_t counter[16], const uint8_t *in, "
        "uint8_t *out, size_t nbytes)",
    ),
    # Streaming: state is STREAM_SIZE bytes, caller-owned.
    "stream_init": (
        INT,
        [P, P, P, Z],
        "(const void *ctx, void *state, const uint8_t *nonce, size_t nonce_len)",
    ),
    "stream_aad": (
        INT, [P, P, P, Z], "(const void *ctx, void *state, const uint8_t *aad, size_t len)"),
    "stream_encrypt": (
        INT,
        [P, P, P, P, Z],
        "(const void *ctx, void *state, const uint8_t *in, uint8_t *out, size_t len)",
    ),
    "stream_decrypt": (
        INT,
        [P, P, P, P, Z],
        "(const void *ctx, void *state, const uint8_t *in, uint8_t *out, size_t len)",
    ),
    "stream_finish": (
        INT, [P, P, P], "(const void *ctx, void *state, uint8_t tag[16])"),
}

# Only backends with `two_slice` export it: the TLS record shape (a piece of any length,
# then at most one byte; 96-bit nonce; AAD <= 16 bytes).  Returns -7 when the shape does not
# qualify, so the caller falls back to seal_gather.
TWO_SLICE_SIGNATURE = (
    INT,
    [P, P, Z, P, Z, P, Z, P, Z, P, P],
    "(const void *ctx, const uint8_t *nonce, size_t nonce_len, const uint8_t *aad, "
    "size_t aad_len, const uint8_t *p0, size_t n0, const uint8_t *p1, size_t n1, "
    "uint8_t *out, uint8_t tag[16])",
)
