"""Variants: every backend x tail {full, split} x each group size it accepts x stitch_min at both
ends of [group, 2*group], at block counts around the group boundaries (0..4*group+2), whole and
with partial bytes: seal, open, gather and the inner kernels (ctr32, ghash, encrypt_blocks)
against the reference model; 32-bit counter wrap at every lane position; and cross-backend
agreement on random inputs.

Each variant is its own ~1 s compile, so by default the sweep is a strength-2 covering array
of (tail, group, stitch_min) per backend (every pair of values of any two factors appears);
`VG_TEST_VARIANTS=all` runs the whole cross product.
"""

from __future__ import annotations

import ctypes
import functools
import os

import pytest
from helpers import (
    BACKEND_NAMES,
    BY_NAME,
    KEY_SIZES,
    TAG,
    bind,
    engine_variants,
    flip,
    inc32,
    nonce_for_j0,
    oracle,
    rbytes,
    ref,
    rng,
    variant_id,
    variants_of,
)
from hypothesis import given, settings
from hypothesis import strategies as st

from vgkernels import spec
from vgkernels.api import AesGcm, InvalidTag
from vgkernels.backends import usable
from vgkernels.variant import Variant

EVERY = os.environ.get("VG_TEST_VARIANTS", "pairwise") == "all"
VARIANTS = [(name, v) for name in BACKEND_NAMES
            for v in variants_of(name, every=EVERY) + engine_variants(name)]
IDS = [f"{name}-{variant_id(v)}" for name, v in VARIANTS]


NONCE12 = bytes(range(40, 52))


def counts(v: Variant) -> list[int]:
    return list(range(4 * v.group + 3))


def partials(v: Variant, nb: int, backend: str) -> list[int]:
    """Whole, and one or two partial sizes rotating with the block count."""
    if backend == "portable":
        return [0, nb % 15 + 1]
    return [0, nb % 15 + 1, (nb * 7 + 3) % 15 + 1]


@functools.cache
def vcase(nb: int, partial: int) -> tuple[bytes, bytes, bytes, bytes, bytes]:
    r = rng("variant", nb, partial)
    key = rbytes(r, KEY_SIZES[nb % 3])
    nonce = rbytes(r, 12 if nb % 4 else 1 + nb % 40)
    aad = rbytes(r, (0, 5, 16, 33)[partial % 4])
    pt = rbytes(r, 16 * nb + partial)
    return key, nonce, aad, pt, ref(key, nonce, pt, aad)


@pytest.mark.parametrize(("backend", "variant"), VARIANTS, ids=IDS, indirect=["backend"])
def test_variant_seal_open_gather(backend, variant, kernel_sets):
    kernel_sets(backend, variant)
    variant = variant.resolved(BY_NAME[backend])
    for nb in counts(variant):
        for partial in partials(variant, nb, backend):
            key, nonce, aad, pt, want = vcase(nb, partial)
            n = len(pt)
            where = f"{backend} {variant_id(variant)} blocks={nb} partial={partial}"
            a = AesGcm(key, backend=backend, variant=variant)
            assert a.encrypt(nonce, pt, aad) == want, where
            buf = bytearray(pt)
            assert a.encrypt_in_place(nonce, buf, aad) == want[-TAG:], where
            assert bytes(buf) == want[:-TAG], where
            # gather: split at a block boundary - 1 and at an odd offset
            r = rng("vsplit", nb, partial)
            cut1 = r.randint(0, n)
            cut2 = max(0, min(n, 16 * r.randint(0, nb + 1) - 1))
            lo, hi = sorted((cut1, cut2))
            out = bytearray(n)
            tag = a.encrypt_into(out, nonce, [pt[:lo], pt[lo:hi], pt[hi:]], aad,
                                 copy_below=False)
            assert (bytes(out), tag) == (want[:-TAG], want[-TAG:]), (where, lo, hi)
            # the TLS record shape (the two-slice entry where built): n-1 bytes then 1
            if n >= 257:
                tls_aad = aad[:16]
                tls = ref(key, NONCE12, pt, tls_aad)
                got = a.encrypt(NONCE12, [pt[:-1], pt[-1:]], tls_aad)
                assert got == tls, (where, "two-slice shape")
                got = a.encrypt(NONCE12, [pt, b""], tls_aad)
                assert got == tls, (where, "two-slice shape, empty second piece")
            # streaming, chunks that straddle blocks and groups
            enc = a.encryptor(nonce, aad)
            got = enc.update(pt[:17]) + enc.update(pt[17:17 + 16 * variant.group + 3])
            got += enc.update(pt[17 + 16 * variant.group + 3:])
            assert got + enc.finalize() == want, (where, "stream")
            # open: one-shot, in place, and a tampered tag
            assert a.decrypt(nonce, want, aad) == pt, where
            a.decrypt_in_place(nonce, buf, aad, want[-TAG:])
            assert bytes(buf) == pt, where
            bad = bytearray(want[:-TAG])
            with pytest.raises(InvalidTag):
                a.decrypt_in_place(nonce, bad, aad, flip(want[-TAG:], nb + partial))
            assert bad == bytearray(n), (where, "not wiped")


@pytest.mark.parametrize(("backend", "variant"), VARIANTS, ids=IDS, indirect=["backend"])
def test_variant_inner_kernels(backend, variant, kernel_sets):
    """ctr32 (with the 32-bit counter wrapping inside the run), ghash from a non-zero state,
    and encrypt_blocks (CTR + GHASH of the output, partial final block) against the spec."""
    kernel_sets(backend, variant)
    g = variant.resolved(BY_NAME[backend]).group
    ctr32, ghash = bind(backend, "ctr32", variant), bind(backend, "ghash", variant)
    enc_blocks = bind(backend, "encrypt_blocks", variant)
    r = rng("inner", backend, variant_id(variant))
    key = rbytes(r, 32)
    a = AesGcm(key, backend=backend, variant=variant)
    h = spec.hash_subkey(key)
    for nb in sorted({0, 1, g - 1, g, g + 1, 2 * g - 1, 2 * g, 2 * g + 1, 3 * g + 2, 4 * g + 2}):
        where = f"{backend} {variant_id(variant)} blocks={nb}"
        data = rbytes(r, 16 * nb)
        start = rbytes(r, 12) + (2**32 - 1 - r.randrange(max(nb, 1))).to_bytes(4, "big")
        counter = ctypes.create_string_buffer(start, 16)
        out = ctypes.create_string_buffer(16 * nb + 1)
        ctr32(a.ctx, counter, data, out, nb)
        assert out.raw[:16 * nb] == spec.ctr32(key, start, data), where
        assert counter.raw == inc32(start, nb), where

        prefix = rbytes(r, 16 * r.randint(0, 3))
        y = ctypes.create_string_buffer(spec.ghash(h, prefix) if prefix else bytes(16), 16)
        ghash(a.ctx, y, data, nb)
        assert y.raw == spec.ghash(h, prefix + data), where

        for partial in (0, 1 + nb % 15):
            text = rbytes(r, 16 * nb + partial)
            y = ctypes.create_string_buffer(bytes(16), 16)
            counter = ctypes.create_string_buffer(start, 16)
            out = ctypes.create_string_buffer(len(text) + 1)
            enc_blocks(a.ctx, y, counter, text, out, len(text))
            ct = spec.ctr32(key, start, text)
            assert out.raw[:len(text)] == ct, (where, partial)
            padded = ct + bytes(-len(ct) % 16)
            assert y.raw == (spec.ghash(h, padded) if padded else bytes(16)), (where, partial)
            assert counter.raw == inc32(start, nb + (partial > 0)), (where, partial)


@pytest.mark.parametrize(("backend", "variant"), VARIANTS, ids=IDS, indirect=["backend"])
def test_variant_counter_wrap(backend, variant, kernel_sets):
    """J0 chosen (through a 16-byte nonce) so the 32-bit counter wraps at every position in
    the first two groups: only the low 32 bits may change (inc32), never the upper 96."""
    kernel_sets(backend, variant)
    g = variant.resolved(BY_NAME[backend]).group
    key = bytes(range(16))
    a = AesGcm(key, backend=backend, variant=variant)
    step = 1 if backend != "portable" else 3
    for j in range(0, 2 * g + 2, step):
        j0 = bytes(range(100, 112)) + (2**32 - 2 - j).to_bytes(4, "big")
        nonce = nonce_for_j0(key, j0)
        pt = rbytes(rng("wrap", j), 16 * (2 * g + 3) + j % 16)
        want = oracle(key, nonce, pt, b"wrap")
        ct = spec.ctr32(key, inc32(j0), pt)
        assert want[:-TAG] == ct  # the nonce really gives this J0
        where = f"{backend} {variant_id(variant)} wrap after {j + 1} blocks"
        assert a.encrypt(nonce, pt, b"wrap") == want, where
        out = bytearray(len(pt))
        tag = a.encrypt_into(out, nonce, [pt[:17], pt[17:]], b"wrap", copy_below=False)
        assert bytes(out) + tag == want, where
        assert a.decrypt(nonce, want, b"wrap") == pt, where


# -- cross-backend agreement ----------------------------------------------------------------------


@functools.cache
def usable_names() -> tuple[str, ...]:
    return tuple(b.name for b in usable())


@settings(max_examples=60)
@given(ks=st.sampled_from(KEY_SIZES), nl=st.one_of(st.just(12), st.integers(1, 64)),
       n=st.one_of(st.integers(0, 600), st.integers(0, 6000)), al=st.integers(0, 80),
       cut=st.integers(0, 2**16), seed=st.integers(0, 2**32))
def test_backends_agree(ks, nl, n, al, cut, seed):
    names = usable_names()
    if len(names) < 2:
        pytest.skip(f"only {names} usable: nothing to compare")
    r = rng(seed)
    key, nonce, aad, pt = rbytes(r, ks), rbytes(r, nl), rbytes(r, al), rbytes(r, n)
    want = oracle(key, nonce, pt, aad)
    cut %= n + 1
    results = {}
    for name in names:
        a = AesGcm(key, backend=name)
        results[name] = a.encrypt(nonce, pt, aad)
        assert a.encrypt(nonce, [pt[:cut], pt[cut:]], aad, copy_below=False) == results[name]
    assert set(results.values()) == {want}, {k: v == want for k, v in results.items()}


def test_every_backend_row_has_variants():
    """The sweep above covers every row and every group size of the table."""
    for name in BACKEND_NAMES:
        be = BY_NAME[name]
        mine = [v for n, v in VARIANTS if n == name and v.skew is None]
        assert {v.group for v in mine} == set(be.groups), name
        assert {(v.tail, v.stitch_min == v.group) for v in mine} == {
            (t, e) for t in ("full", "split") for e in (True, False)}, name
        assert {(v.group, v.tail) for v in mine} == {
            (g, t) for g in be.groups for t in ("full", "split")}, name
        assert {(v.group, v.stitch_min) for v in mine} >= {
            (g, s) for g in be.groups for s in (g, 2 * g)} or not EVERY, name
        for g in be.groups:
            with pytest.raises(ValueError, match=r"stitch_min must lie in"):
                Variant(group=g, stitch_min=g - 1).resolved(be)
            with pytest.raises(ValueError, match=r"stitch_min must lie in"):
                Variant(group=g, stitch_min=2 * g + 1).resolved(be)
        with pytest.raises(ValueError, match=r"not in"):
            Variant(group=max(be.groups) + 1).resolved(be)
        with pytest.raises(ValueError, match=r"tail must be"):
            Variant(tail="half").resolved(be)
