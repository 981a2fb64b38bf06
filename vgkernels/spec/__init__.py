"""Reference model of AES (FIPS 197) and GCM (NIST SP 800-38D): the oracle kernels are tested
against.

Readable first, fast enough second: the kernels in `aes`, `ghash` and `gcm` follow the
standards' algorithms step by step and are compiled with numba so that test sweeps of thousands
of cases stay quick.  Not constant time; never use it to protect data.

Public API (bytes in, bytes out)::

    aes_encrypt_block(key, block) -> bytes
    hash_subkey(key) -> bytes                      # H = CIPH_K(0^128)
    gf_mult(x, y) -> bytes                         # GF(2^128) product, Algorithm 1
    ghash(h, data) -> bytes                        # Algorithm 2, len(data) % 16 == 0
    ctr32(key, counter_block, data) -> bytes       # GCTR, Algorithm 3 (inc32 counter)
    seal(key, nonce, plaintext, aad) -> (ciphertext, tag)
    open(key, nonce, ciphertext, aad, tag) -> plaintext, raises InvalidTag

Conformance vectors (Wycheproof, NIST CAVP) are loaded by `vgkernels.spec.vectors`.
"""

from __future__ import annotations

from .aes import aes_encrypt_block
from .gcm import InvalidTag, ctr32, hash_subkey, open, seal
from .ghash import gf_mult, ghash

__all__ = [
    "InvalidTag",
    "aes_encrypt_block",
    "ctr32",
    "gf_mult",
    "ghash",
    "hash_subkey",
    "open",
    "seal",
]
