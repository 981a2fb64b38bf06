"""The short path (vgkernels.kernels.short): every AAD length 0..17 against every text length
0..16 * (the longest piece or chunk) + 17 on both sides of its limits (96-bit nonce, AAD <= 16
bytes, text <= 16 * SHORT_BLOCKS bytes, 16 * MEDIUM_BLOCKS through the medium path's chunk where
the backend has it, or vaes_avx512's longer pieces; one block wide and two blocks wide), seal
and open in place and out of place, every key size, against `cryptography`; the bytes around
the output untouched; a tampered tag rejected."""

from __future__ import annotations

import ctypes
import re

import pytest
from helpers import KEY_SIZES, TAG, bind_at, flip, oracle, rbytes, ref, rng

from vgkernels import abi, jit
from vgkernels.api import AesGcm, InvalidTag
from vgkernels.backends import BACKENDS, availability, get
from vgkernels.kernels import generate
from vgkernels.kernels.modes import DEC, ENC
from vgkernels.kernels.short import (
    HASH_FIRST_ONE,
    MAX_AAD,
    MEDIUM_BLOCKS,
    chunk_blocks,
    piece_blocks,
)

AADS = range(MAX_AAD + 2)


def texts(backend: str) -> range:
    """Every text length up to 17 bytes past the backend's longest piece or medium chunk."""
    be = get(backend)
    return range(16 * max(MEDIUM_BLOCKS, piece_blocks(be, ENC), piece_blocks(be, DEC)) + 18)
GUARD = 16


@pytest.mark.parametrize("ks", KEY_SIZES)
def test_short_seal_and_open(backend, ks):
    r = rng("short", backend, ks)
    key = rbytes(r, ks)
    aead = AesGcm(key, backend=backend)
    for al in AADS:
        for n in texts(backend):
            nonce, aad, pt = rbytes(r, 12), rbytes(r, al), rbytes(r, n)
            want = oracle(key, nonce, pt, aad)
            where = f"{backend} key={ks} aad={al} n={n}"
            assert aead.encrypt(nonce, pt, aad) == want, where
            buf = bytearray(pt + b"\xa5" * GUARD)
            tag = aead.encrypt_in_place(nonce, memoryview(buf)[:n], aad)
            assert bytes(buf[:n]) + bytes(tag) == want and buf[n:] == b"\xa5" * GUARD, where
            assert aead.decrypt(nonce, want, aad) == pt, where
            back = bytearray(want[:n])
            assert aead.decrypt_in_place(nonce, back, aad, want[n:]) is None and back == pt, where
            with pytest.raises(InvalidTag):
                aead.decrypt(nonce, want[:n] + flip(want[n:], r.randrange(8 * TAG)), aad)


def test_short_path_not_taken_for_other_nonces(backend):
    """A 16-byte nonce with a short text goes through the general path and still agrees."""
    r = rng("short-long-nonce", backend)
    key = rbytes(r, 16)
    aead = AesGcm(key, backend=backend)
    for n in (0, 1, 16, 64):
        nonce, aad, pt = rbytes(r, 16), rbytes(r, 13), rbytes(r, n)
        assert aead.encrypt(nonce, pt, aad) == oracle(key, nonce, pt, aad)


def test_chunks_seal_and_open(backend):
    """The chunks past the medium path (seal on the one-block-wide backends, seal and open on
    vaes_avx2, up to 16 * chunk_blocks bytes): every text length from 16 * MEDIUM_BLOCKS - 1 to
    17 bytes past the chunks' limit (the general path beyond), AAD lengths 0..17 in turn, every
    key size in turn; one-shot, in place (nothing written past the text) and out of place,
    against `cryptography`, every 61st also against the reference model; opened back, also in
    place; and records (a piece then one byte, the two-slice shape) and three pieces through
    the gather.  On the other backends the same lengths go through their general path."""
    be = get(backend)
    top = 16 * max(chunk_blocks(be), MEDIUM_BLOCKS) + 17
    r = rng("chunks", backend)
    aeads = {ks: (key := rbytes(r, ks), AesGcm(key, backend=backend)) for ks in KEY_SIZES}
    for n in range(16 * MEDIUM_BLOCKS - 1, top + 1):
        key, aead = aeads[KEY_SIZES[n % 3]]
        al = n % (MAX_AAD + 2)
        nonce, aad, pt = rbytes(r, 12), rbytes(r, al), rbytes(r, n)
        want = oracle(key, nonce, pt, aad)
        where = f"{backend} key={len(key)} aad={al} n={n}"
        if n % 61 == 0:
            assert ref(key, nonce, pt, aad) == want, where
        assert aead.encrypt(nonce, pt, aad) == want, where
        buf = bytearray(pt + b"\xa5" * GUARD)
        tag = aead.encrypt_in_place(nonce, memoryview(buf)[:n], aad)
        assert bytes(buf[:n]) + bytes(tag) == want and buf[n:] == b"\xa5" * GUARD, where
        out = bytearray(b"\x5a" * (n + GUARD))
        tag = aead.encrypt_into(out, nonce, pt, aad)
        assert bytes(out[:n]) + bytes(tag) == want and out[n:] == b"\x5a" * GUARD, where
        assert aead.decrypt(nonce, want, aad) == pt, where
        buf = bytearray(want[:n] + b"\xa5" * GUARD)
        aead.decrypt_in_place(nonce, memoryview(buf)[:n], aad, want[n:])
        assert bytes(buf[:n]) == pt and buf[n:] == b"\xa5" * GUARD, where
        assert aead.encrypt(nonce, [pt[:-1], pt[-1:]], aad, copy_below=False) == want, where
        k = r.randrange(n + 1)
        j = r.randrange(k, n + 1)
        assert aead.encrypt(nonce, [pt[:k], pt[k:j], pt[j:]], aad, copy_below=False) == want


def test_chunk_blocks_fit_the_counter_byte():
    """The chunks add block counts to the counter's last byte only (short.counter_vector):
    2 + blocks must stay below 256 on every backend."""
    for be in BACKENDS:
        assert 2 + chunk_blocks(be) < 256, be.name


def test_narrow_texts_hold_no_wide_register():
    """vaes_avx512's texts of 1..NARROW_BLOCKS blocks go to vg.short.<mode>.narrow
    (`short.narrow_texts`): its code names no ymm or zmm register, so LLVM gives it no
    `vzeroupper` (vg.short.<mode>, which the wide pieces share, has one), and every function
    that calls vg.short.<mode> calls the narrow one too, by the length (but vg.short.enc.copy,
    whose records are longer than the pieces with the byte).  Static: the assembly for the
    row's features, on any host (the texts themselves: test_short_seal_and_open)."""
    from vgkernels import listing
    from vgkernels.kernels import short

    assert short.SHORT_BLOCKS > short.NARROW_BLOCKS  # vg.short.enc.copy's records are longer
    _, text = listing.text("vaes_avx512")
    funcs = listing.functions(text)
    for mode in ("enc", "dec"):
        name = f"vg.short.{mode}"
        assert not re.search(r"%[yz]mm\d|vzeroupper", funcs[f"{name}.narrow"]), mode
        assert "vzeroupper" in funcs[name], mode
        calls = re.compile(rf"^\s*(call|jmp)q?\s+{re.escape(name)}(\.narrow)?$", re.M)
        callers = {f: {m.group(2) or "" for m in calls.finditer(t)} for f, t in funcs.items()}
        callers = {f: kinds for f, kinds in callers.items()
                   if "" in kinds and f != short.RECORD_COPY}
        assert callers, mode
        assert all(".narrow" in kinds for kinds in callers.values()), callers


def test_record_pieces_touch_no_stack():
    """vaes_avx512's record pieces (vg.short.enc.byte and .byte.long, `short.record_registers`)
    take all nine arguments in registers and save none of the caller's: no push, no pop, no
    stack access at all, so no load of theirs can follow their output stores at the page offset
    of one (4K aliasing).  The C convention had them save five registers and read three stack
    arguments.  Static: the assembly for the row's features, on any host (the records
    themselves: test_api_pieces)."""
    from vgkernels import listing
    from vgkernels.kernels import short

    _, text = listing.text("vaes_avx512")
    funcs = listing.functions(text)
    names = [short.symbol(short.ENC, extra=True), short.symbol(short.ENC, extra=True, long=True)]
    for name in names:
        assert not re.search(r"\bpush|\bpop|%rsp|%rbp", funcs[name]), name
    calls = re.compile(rf"^\s*callq?\s+{re.escape(names[0])}$", re.M)
    assert any(calls.search(t) for t in funcs.values())  # a real call: its caller saves
    assert not short.record_registers(get("vaes_avx2"))


@pytest.mark.parametrize("cpu", sorted(HASH_FIRST_ONE))
def test_one_block_open_hashed_first_on_any_host(cpu):
    """aesni_pclmul_avx's one-block open piece hashes first only in code scheduled for the
    CPUs of HASH_FIRST_ONE (short.hash_first): that code, compiled here with the row's own
    features whatever this host is, opens (and seals) every text of 0..2 blocks with every AAD
    length against `cryptography`, and rejects a tampered tag.  Its vg.short.dec differs from
    the generic scheduling's, so the test runs the other form."""
    be = get("aesni_pclmul_avx")
    why = availability()[be.name]
    if why is not None:
        pytest.skip(f"{be.name}: {why}")
    prefix, text = generate(be, cpu=cpu)
    generic = generate(be, cpu="x86-64")[1]
    short_dec = re.compile(r"^define [^@]*@\"?vg\.short\.dec\"?\(.*?^}$", re.M | re.S)
    assert short_dec.search(text).group(0) != short_dec.search(generic).group(0)
    lib = jit.compile_ir(f"{prefix}-{cpu}", text, be.llvm_features, cpu)
    key_init, seal_out, open_out = (bind_at(lib.address(f"{prefix}_{op}"), op)
                                    for op in ("key_init", "seal_out", "open_out"))
    r = rng("one-block-first", cpu)
    for ks in KEY_SIZES:
        key = rbytes(r, ks)
        ctx = ctypes.create_string_buffer(abi.CTX_SIZE + abi.CTX_ALIGN)
        at = (ctypes.addressof(ctx) + abi.CTX_ALIGN - 1) & -abi.CTX_ALIGN
        assert key_init(at, key, ks) == 0
        for al in AADS:
            for n in range(33):
                nonce, aad, pt = rbytes(r, 12), rbytes(r, al), rbytes(r, n)
                want = oracle(key, nonce, pt, aad)
                where = f"{cpu} key={ks} aad={al} n={n}"
                out, tag = ctypes.create_string_buffer(n + 1), ctypes.create_string_buffer(16)
                assert seal_out(at, nonce, 12, aad, al, pt, out, n, tag) == 0, where
                assert out.raw[:n] + tag.raw == want, where
                back = ctypes.create_string_buffer(n + 1)
                assert open_out(at, nonce, 12, aad, al, want[:n], back, n, want[n:], 16) == 0
                assert back.raw[:n] == pt, where
                bad = flip(want[n:], r.randrange(8 * TAG))
                assert open_out(at, nonce, 12, aad, al, want[:n], back, n, bad, 16) \
                    == abi.RC_BAD_TAG, where
                assert back.raw[:n] == bytes(n), where  # wiped
