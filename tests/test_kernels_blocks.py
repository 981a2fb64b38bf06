"""Every block count 0..72, whole and with a partial final block, every key size and usable
backend, against the reference model: seal (one-shot, in place, out of place, C ABI seal_out)
and open (one-shot, in place, into a buffer) with tampered inputs.  Then random lengths and
nonces against `cryptography`."""

from __future__ import annotations

import ctypes
import functools

import pytest
from helpers import (
    KEY_SIZES,
    TAG,
    bind,
    flip,
    nonce_len_for,
    oracle,
    partials_for,
    rbytes,
    ref,
    rng,
)
from hypothesis import given, settings
from hypothesis import strategies as st

from vgkernels.api import AesGcm, InvalidTag

MAX_BLOCKS = 72
SENTINEL = 0xA5


@functools.cache
def case(ks: int, nb: int, partial: int) -> tuple[bytes, bytes, bytes, bytes, bytes]:
    """(key, nonce, aad, plaintext, ct || tag) for a block count and partial size."""
    r = rng("blocks", ks, nb, partial)
    i = nb * 16 + partial
    key = rbytes(r, ks)
    nonce = rbytes(r, nonce_len_for(i))
    aad = rbytes(r, r.choice((0, 0, 1, 13, 16, 17, 31, 48, 70)))
    pt = rbytes(r, 16 * nb + partial)
    return key, nonce, aad, pt, ref(key, nonce, pt, aad)


def cases(backend: str, ks: int):
    for nb in range(MAX_BLOCKS + 1):
        for partial in partials_for(backend, nb):
            yield (nb, partial, *case(ks, nb, partial))


def describe(backend, ks, nb, partial, nonce, aad) -> str:
    return (f"{backend} key={8 * ks} blocks={nb} partial={partial} nonce_len={len(nonce)} "
            f"aad_len={len(aad)}")


@pytest.mark.parametrize("ks", KEY_SIZES)
def test_seal_every_block_count(backend, ks):
    for nb, partial, key, nonce, aad, pt, want in cases(backend, ks):
        got = AesGcm(key, backend=backend).encrypt(nonce, pt, aad if aad else None)
        assert got == want, describe(backend, ks, nb, partial, nonce, aad)


@pytest.mark.parametrize("ks", KEY_SIZES)
def test_seal_in_place_every_block_count(backend, ks):
    for nb, partial, key, nonce, aad, pt, want in cases(backend, ks):
        aead = AesGcm(key, backend=backend)
        buf = bytearray(pt)
        tag = aead.encrypt_in_place(nonce, buf, aad)
        where = describe(backend, ks, nb, partial, nonce, aad)
        assert bytes(buf) == want[:-TAG], where
        assert tag == want[-TAG:], where


@pytest.mark.parametrize("ks", KEY_SIZES)
def test_seal_out_of_place_every_block_count(backend, ks):
    """encrypt_into (gather of one piece, and copy+seal) and the C ABI's seal_out, with
    sentinel bytes around the output that must survive."""
    seal_out = bind(backend, "seal_out")
    for nb, partial, key, nonce, aad, pt, want in cases(backend, ks):
        n = len(pt)
        aead = AesGcm(key, backend=backend)
        where = describe(backend, ks, nb, partial, nonce, aad)
        for copy_below in (False, (n + 1, n + 1)):
            out = bytearray([SENTINEL]) * (n + 9)
            tag = aead.encrypt_into(out, nonce, pt, aad, copy_below=copy_below)
            assert bytes(out[:n]) == want[:-TAG], (where, copy_below)
            assert tag == want[-TAG:], (where, copy_below)
            assert out[n:] == bytearray([SENTINEL]) * 9, (where, "wrote past out")
        # the C ABI directly: sentinels on both sides of out
        out = (ctypes.c_uint8 * (n + 32))(*([SENTINEL] * (n + 32)))
        tag = ctypes.create_string_buffer(TAG)
        src = ctypes.create_string_buffer(pt, max(n, 1))
        aad_b = ctypes.create_string_buffer(aad, max(len(aad), 1))
        rc = seal_out(aead.ctx, nonce, len(nonce), aad_b, len(aad), src,
                      ctypes.addressof(out) + 16, n, tag)
        assert rc == 0, where
        assert bytes(out[16:16 + n]) == want[:-TAG], where
        assert tag.raw == want[-TAG:], where
        assert bytes(out[:16]) + bytes(out[16 + n:]) == bytes([SENTINEL]) * 32, where


@pytest.mark.parametrize("ks", KEY_SIZES)
def test_open_every_block_count(backend, ks):
    """decrypt, decrypt_in_place and decrypt_into give the plaintext; a flipped bit (in the
    ciphertext, the tag, the AAD or the nonce) raises InvalidTag and wipes the output."""
    for nb, partial, key, nonce, aad, pt, want in cases(backend, ks):
        n = len(pt)
        ct, tag = want[:-TAG], want[-TAG:]
        aead = AesGcm(key, backend=backend)
        where = describe(backend, ks, nb, partial, nonce, aad)
        assert aead.decrypt(nonce, want, aad) == pt, where
        buf = bytearray(ct)
        assert aead.decrypt_in_place(nonce, buf, aad, tag) is None
        assert bytes(buf) == pt, where
        out = bytearray([SENTINEL]) * (n + 5)
        aead.decrypt_into(out, nonce, ct, aad, tag)
        assert bytes(out[:n]) == pt, where
        assert out[n:] == bytearray([SENTINEL]) * 5, where

        # tamper: one bit, somewhere chosen by the case
        r = rng("tamper", ks, nb, partial)
        what = ("ct", "tag", "aad", "nonce")[(nb + partial) % 4]
        if what == "ct" and n == 0 or what == "aad" and not aad:
            what = "tag"
        bit = r.randrange(1 << 20)
        t_nonce, t_aad, t_ct, t_tag = nonce, aad, ct, tag
        if what == "ct":
            t_ct = flip(ct, bit)
        elif what == "tag":
            t_tag = flip(tag, bit)
        elif what == "aad":
            t_aad = flip(aad, bit)
        else:
            t_nonce = flip(nonce, bit)
        where = f"{where} tampered {what} bit {bit}"
        with pytest.raises(InvalidTag):
            aead.decrypt(t_nonce, t_ct + t_tag, t_aad)
        buf = bytearray(t_ct)
        with pytest.raises(InvalidTag):
            aead.decrypt_in_place(t_nonce, buf, t_aad, t_tag)
        assert buf == bytearray(n), (where, "in-place buffer not wiped")
        out = bytearray([SENTINEL]) * (n + 5)
        with pytest.raises(InvalidTag):
            aead.decrypt_into(out, t_nonce, t_ct, t_aad, t_tag)
        assert out[:n] == bytearray(n), (where, "out not wiped")
        assert out[n:] == bytearray([SENTINEL]) * 5, (where, "wrote past out")


@pytest.mark.parametrize("ks", (16, 32))
def test_open_one_block_ends(backend, ks):
    """Texts whose last 16-block step leaves one block or less (16k + 1 blocks, or 16k blocks
    and a partial block), with and without whole steps and the stitched loop before it, with
    and without AAD (the state then goes to the first hashed block), nonces of 13 bytes so
    that no short path takes them: AVX-512's dec takes such an end as one xmm block."""
    r = rng("one-block-ends", backend, ks)
    key = rbytes(r, ks)
    aead = AesGcm(key, backend=backend)
    for k in (0, 1, 2, 3, 4, 5, 8):
        for nb, partial in ((16 * k, 1), (16 * k, 15), (16 * k + 1, 0), (16 * k + 1, 7)):
            if nb == 0 and partial == 0:
                continue
            for aad in (b"", rbytes(r, 20)):
                nonce, pt = rbytes(r, 13), rbytes(r, 16 * nb + partial)
                want = ref(key, nonce, pt, aad)
                where = (backend, ks, nb, partial, len(aad))
                assert aead.decrypt(nonce, want, aad) == pt, where
                assert aead.encrypt(nonce, pt, aad) == want, where
                with pytest.raises(InvalidTag):
                    aead.decrypt(nonce, flip(want, 8 * (len(pt) - 1)), aad)


# -- random lengths and nonces --------------------------------------------------------------------

nonce_lens = st.one_of(st.just(12), st.just(12), st.integers(1, 64))
text_lens = st.one_of(st.integers(0, 300), st.integers(0, 20 * 1024))
aad_lens = st.one_of(st.just(0), st.integers(0, 40), st.integers(0, 2000))


@settings(max_examples=40)
@given(ks=st.sampled_from(KEY_SIZES), nl=nonce_lens, n=text_lens, al=aad_lens,
       seed=st.integers(0, 2**32))
def test_random_lengths_against_cryptography(backend, ks, nl, n, al, seed):
    if backend == "portable" and n > 4096:
        n %= 4096  # ~1 us per block: keep the slow backend's share small
    r = rng(seed)
    key, nonce, aad, pt = rbytes(r, ks), rbytes(r, nl), rbytes(r, al), rbytes(r, n)
    want = oracle(key, nonce, pt, aad)
    aead = AesGcm(key, backend=backend)
    assert aead.encrypt(nonce, pt, aad) == want
    assert aead.decrypt(nonce, want, aad) == pt
    buf = bytearray(pt)
    assert aead.encrypt_in_place(nonce, buf, aad) == want[-TAG:]
    assert bytes(buf) == want[:-TAG]
    aead.decrypt_in_place(nonce, buf, aad, want[-TAG:])
    assert bytes(buf) == pt


@settings(max_examples=25)
@given(nl=st.integers(8, 128), n=st.integers(0, 4096), seed=st.integers(0, 2**32))
def test_long_nonces_against_cryptography(backend, nl, n, seed):
    """Nonces over 64 bytes (up to cryptography's 128) take the GHASH path for J0."""
    r = rng(seed)
    key, nonce, pt, aad = rbytes(r, 16), rbytes(r, nl), rbytes(r, n), rbytes(r, nl % 33)
    want = oracle(key, nonce, pt, aad)
    assert AesGcm(key, backend=backend).encrypt(nonce, pt, aad) == want


@pytest.mark.parametrize("ks", KEY_SIZES)
def test_aad_and_nonce_lengths(backend, ks):
    """AAD of every block count 0..72 (whole and partial; it goes through the hash-only bulk
    loop), and nonces of 1..300 bytes (J0 by GHASH when not 12), against the reference."""
    r = rng("aad-nonce", backend, ks)
    key = rbytes(r, ks)
    a = AesGcm(key, backend=backend)
    pt = rbytes(r, 37)
    step = 1 if backend != "portable" else 2
    for ab in range(0, MAX_BLOCKS + 1, step):
        for partial in (0, 1 + (ab * 5) % 15):
            aad, nonce = rbytes(r, 16 * ab + partial), rbytes(r, 12)
            want = ref(key, nonce, pt, aad)
            assert a.encrypt(nonce, pt, aad) == want, (backend, ks, "aad", len(aad))
            assert a.decrypt(nonce, want, aad) == pt, (backend, ks, "aad", len(aad))
    for nl in range(1, 301, step):
        nonce = rbytes(r, nl)
        want = ref(key, nonce, pt, b"x")
        assert a.encrypt(nonce, pt, b"x") == want, (backend, ks, "nonce", nl)
        enc = a.encryptor(nonce, b"x")
        assert enc.update(pt) + enc.finalize() == want, (backend, ks, "stream nonce", nl)


def test_large_text_and_aad(backend):
    """Megabyte-sized text and 64 KiB of AAD against `cryptography` (one each, plus odd tails)."""
    big = 2**20 if backend != "portable" else 2**17
    r = rng("large", backend)
    key = rbytes(r, 32)
    a = AesGcm(key, backend=backend)
    for n, al in ((big + 13, 0), (big, 5), (1000, 65536 + 7), (17, 65536)):
        nonce, pt, aad = rbytes(r, 12), rbytes(r, n), rbytes(r, al)
        want = oracle(key, nonce, pt, aad)
        assert a.encrypt(nonce, pt, aad) == want, (backend, n, al)
        assert a.decrypt(nonce, want, aad) == pt, (backend, n, al)
        cut = n // 3 + 5
        assert a.encrypt(nonce, [pt[:cut], pt[cut:]], aad, copy_below=False) == want


def test_every_aad_length_around_one_block(backend):
    """AAD of 0..33 bytes (one block or less is hashed by the entry itself, more by the bulk
    function) with texts past the short path, 12-byte and other nonces, seal and open, one
    piece and two, against `cryptography`; a flipped AAD bit fails."""
    r = rng("aad-one-block", backend)
    key = rbytes(r, 16)
    a = AesGcm(key, backend=backend)
    for al in range(34):
        for n, nl in ((129, 12), (300, 12), (129, 16)):
            nonce, pt, aad = rbytes(r, nl), rbytes(r, n), rbytes(r, al)
            want = oracle(key, nonce, pt, aad)
            where = (backend, al, n, nl)
            assert a.encrypt(nonce, pt, aad) == want, where
            assert a.encrypt(nonce, [pt[:50], pt[50:]], aad, copy_below=False) == want, where
            assert a.decrypt(nonce, want, aad) == pt, where
            if al:
                with pytest.raises(InvalidTag):
                    a.decrypt(nonce, want, flip(aad, r.randrange(8 * al)))
