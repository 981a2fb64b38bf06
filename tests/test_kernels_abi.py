"""The C ABI itself (bound with ctypes from abi.SIGNATURES): the signatures agree with the
prototypes, every backend exports every op, the return codes at the top of
vgkernels/kernels/entries.py, truncated tags, and the streaming state machine's -6."""

from __future__ import annotations

import ctypes
import re

import pytest
from helpers import TAG, bind, pieces_array, rbytes, ref, rng

from vgkernels import abi
from vgkernels.abi import MAX_AAD, MAX_PLAINTEXT
from vgkernels.api import AesGcm

OK, BAD_TAG, BAD_NONCE, TOO_LONG, AAD_TOO_LONG, BAD_TAG_LEN, ORDER = 0, -1, -2, -3, -4, -5, -6


def prototype_arity(proto: str) -> int:
    inner = proto.strip()[1:-1].strip()
    return 0 if inner in ("", "void") else len(re.split(r",", inner))


@pytest.mark.parametrize("op", list(abi.SIGNATURES))
def test_signature_matches_prototype(op):
    _, argtypes, proto = abi.SIGNATURES[op]
    assert len(argtypes) == prototype_arity(proto), (op, proto)


def test_encrypt_blocks_takes_six_arguments():
    """(ctx, y, counter, in, out, nbytes): SIGNATURES once listed five argtypes."""
    _, argtypes, proto = abi.SIGNATURES["encrypt_blocks"]
    assert len(argtypes) == prototype_arity(proto) == 6, proto


def test_two_slice_signature_matches_prototype():
    _, argtypes, proto = abi.TWO_SLICE_SIGNATURE
    assert len(argtypes) == prototype_arity(proto) == 11


def test_every_op_is_exported(backend, kernel_sets):
    k = kernel_sets(backend)
    addrs = {op: k.address(op) for op in abi.SIGNATURES}
    assert all(addrs.values()), addrs
    assert len(set(addrs.values())) == len(addrs), "two ops share one address"
    assert k.prefix == f"vg_{backend}"


class Ctx:
    """A context, key-initialised through the C ABI (not through AesGcm)."""

    def __init__(self, backend: str, key: bytes):
        self.raw = (ctypes.c_uint8 * (abi.CTX_SIZE + abi.CTX_ALIGN))()
        self.addr = (ctypes.addressof(self.raw) + abi.CTX_ALIGN - 1) & ~(abi.CTX_ALIGN - 1)
        keybuf = ctypes.create_string_buffer(key, max(len(key), 1))
        self.rc = bind(backend, "key_init")(self.addr, keybuf, len(key))


@pytest.mark.parametrize("key_len", [0, 1, 8, 15, 17, 20, 23, 25, 31, 33, 48, 64])
def test_key_init_rejects_lengths(backend, key_len):
    assert Ctx(backend, bytes(range(key_len))).rc == -1


@pytest.mark.parametrize("ks", [16, 24, 32])
def test_key_init_layout(backend, ks):
    """nrounds and key length land where abi.py documents them; H^1 is stored; the padding
    after H^1 is zero."""
    key = rbytes(rng("layout", ks), ks)
    ctx = Ctx(backend, key)
    assert ctx.rc == 0
    raw = bytes((ctypes.c_uint8 * abi.CTX_SIZE).from_address(ctx.addr))
    assert int.from_bytes(raw[abi.CTX_NROUNDS:abi.CTX_NROUNDS + 4], "little") == ks // 4 + 6
    assert int.from_bytes(raw[abi.CTX_KEY_LEN:abi.CTX_KEY_LEN + 4], "little") == ks
    pad = raw[abi.power_offset(1) + 16:abi.power_offset(1) + 16 * (1 + abi.CTX_POWER_PAD)]
    assert pad == bytes(16 * abi.CTX_POWER_PAD)
    assert raw[abi.power_offset(1):abi.power_offset(1) + 16] != bytes(16)
    assert raw[abi.power_offset(abi.CTX_NPOW):abi.power_offset(abi.CTX_NPOW) + 16] != bytes(16)


def test_return_codes(backend):
    key, nonce, aad, pt = b"K" * 16, b"N" * 12, b"A" * 7, bytes(range(40))
    ctx = Ctx(backend, key)
    seal, seal_out = bind(backend, "seal"), bind(backend, "seal_out")
    open_, open_out = bind(backend, "open"), bind(backend, "open_out")
    gather = bind(backend, "seal_gather")
    want = ref(key, nonce, pt, aad)
    buf = ctypes.create_string_buffer(pt, len(pt))
    out = ctypes.create_string_buffer(b"\x5a" * 64, 64)
    tag = ctypes.create_string_buffer(b"\x77" * 16, 16)

    def untouched():
        return buf.raw == pt and out.raw == b"\x5a" * 64 and tag.raw == b"\x77" * 16

    # empty nonce
    assert seal(ctx.addr, nonce, 0, aad, len(aad), buf, len(pt), tag) == BAD_NONCE
    assert seal_out(ctx.addr, nonce, 0, aad, len(aad), buf, out, len(pt), tag) == BAD_NONCE
    assert open_(ctx.addr, nonce, 0, aad, len(aad), buf, len(pt), tag, 16) == BAD_NONCE
    assert open_out(ctx.addr, nonce, 0, aad, len(aad), buf, out, len(pt), tag, 16) == BAD_NONCE
    assert untouched()
    # text too long: refused before any byte is read or written
    for n in (MAX_PLAINTEXT + 1, 2**63, 2**64 - 1):
        assert seal(ctx.addr, nonce, 12, aad, len(aad), buf, n, tag) == TOO_LONG, n
        assert seal_out(ctx.addr, nonce, 12, aad, len(aad), buf, out, n, tag) == TOO_LONG, n
        assert open_(ctx.addr, nonce, 12, aad, len(aad), buf, n, tag, 16) == TOO_LONG, n
        assert open_out(ctx.addr, nonce, 12, aad, len(aad), buf, out, n, tag, 16) == TOO_LONG
    assert untouched()
    # AAD too long
    for n in (MAX_AAD + 1, 2**64 - 1):
        assert seal(ctx.addr, nonce, 12, aad, n, buf, len(pt), tag) == AAD_TOO_LONG
        assert open_out(ctx.addr, nonce, 12, aad, n, buf, out, len(pt), tag, 16) == AAD_TOO_LONG
    assert untouched()
    # tag length outside 4..16
    for tl in (0, 1, 3, 17, 32, 2**64 - 1):
        assert open_(ctx.addr, nonce, 12, aad, len(aad), buf, len(pt), tag, tl) == BAD_TAG_LEN
        assert open_out(ctx.addr, nonce, 12, aad, len(aad), buf, out, len(pt), tag,
                        tl) == BAD_TAG_LEN
    assert untouched()
    # gather: a total over the limit, including one that wraps around 2^64
    p = ctypes.addressof(buf)
    for lens in ([MAX_PLAINTEXT + 1], [MAX_PLAINTEXT, 1], [2**64 - 1, 1], [2**63, 2**63, 16],
                 [8, 2**64 - 8], [2**64 - 1, 100], [100, 2**64 - 50], [2**64 - 1024, 2048]):
        arr = pieces_array([(p, n) for n in lens])
        assert gather(ctx.addr, nonce, 12, aad, len(aad), arr, len(lens), out, tag) == TOO_LONG
    assert gather(ctx.addr, nonce, 0, aad, len(aad), pieces_array([(p, 4)]), 1, out,
                  tag) == BAD_NONCE
    for lens in ([4, 4], [16, 300], [1, 39]):  # two pieces of a short text (vg.gather.copy)
        arr = pieces_array([(p, n) for n in lens])
        assert gather(ctx.addr, nonce, 0, aad, len(aad), arr, 2, out, tag) == BAD_NONCE
        assert gather(ctx.addr, nonce, 12, aad, MAX_AAD + 1, arr, 2, out, tag) == AAD_TOO_LONG
    assert untouched()
    # and the happy path still works on the same context
    assert seal_out(ctx.addr, nonce, 12, aad, len(aad), buf, out, len(pt), tag) == OK
    assert out.raw[:len(pt)] + tag.raw == want
    assert out.raw[len(pt):] == b"\x5a" * (64 - len(pt))


@pytest.mark.parametrize("tag_len", range(4, 17))
def test_truncated_tags(backend, tag_len):
    """open / open_out accept a tag prefix of 4..16 bytes; a wrong byte anywhere in the prefix
    fails and wipes; bytes after the prefix are ignored."""
    r = rng("trunc", backend, tag_len)
    key, nonce, aad = rbytes(r, 32), rbytes(r, 12), rbytes(r, 9)
    open_, open_out = bind(backend, "open"), bind(backend, "open_out")
    ctx = Ctx(backend, key)
    for n in (0, 1, 16, 31, 100):
        pt = rbytes(r, n)
        want = ref(key, nonce, pt, aad)
        ct, full = want[:-TAG], want[-TAG:]
        given = full[:tag_len] + bytes(b ^ 0xFF for b in full[tag_len:])  # junk after prefix
        out = ctypes.create_string_buffer(n + 1)
        assert open_out(ctx.addr, nonce, 12, aad, len(aad), ct, out, n, given, tag_len) == OK
        assert out.raw[:n] == pt
        buf = ctypes.create_string_buffer(ct, n + 1)
        assert open_(ctx.addr, nonce, 12, aad, len(aad), buf, n, given, tag_len) == OK
        assert buf.raw[:n] == pt
        for i in range(tag_len):
            bad = bytearray(given)
            bad[i] ^= 1 << (i % 8)
            out = ctypes.create_string_buffer(b"\x33" * (n + 1), n + 1)
            rc = open_out(ctx.addr, nonce, 12, aad, len(aad), ct, out, n, bytes(bad), tag_len)
            assert rc == BAD_TAG, (n, i)
            assert out.raw == bytes(n) + b"\x33", (n, i, "not wiped, or wiped too much")


def test_stream_order_codes(backend):
    key, nonce = b"k" * 24, b"n" * 12
    ctx = Ctx(backend, key)
    init, aad_, enc = (bind(backend, op) for op in ("stream_init", "stream_aad",
                                                    "stream_encrypt"))
    dec, fin = bind(backend, "stream_decrypt"), bind(backend, "stream_finish")
    raw = (ctypes.c_uint8 * (abi.STREAM_SIZE + 64))()
    st = (ctypes.addressof(raw) + 63) & ~63
    assert init(ctx.addr, st, nonce, 0) == BAD_NONCE
    assert init(ctx.addr, st, nonce, 12) == OK
    assert aad_(ctx.addr, st, b"ab", 2) == OK
    assert aad_(ctx.addr, st, b"c", 1) == OK
    assert aad_(ctx.addr, st, b"x", MAX_AAD) == AAD_TOO_LONG  # 3 + MAX_AAD > MAX_AAD
    src = bytes(range(50))
    out = ctypes.create_string_buffer(50)
    assert enc(ctx.addr, st, src, out, 20) == OK
    assert enc(ctx.addr, st, src, out, MAX_PLAINTEXT) == TOO_LONG  # 20 + MAX > MAX
    assert aad_(ctx.addr, st, b"d", 1) == ORDER
    assert enc(ctx.addr, st, src[20:], ctypes.byref(out, 20), 30) == OK
    tag = ctypes.create_string_buffer(16)
    assert fin(ctx.addr, st, tag) == OK
    want = ref(key, nonce, src, b"abc")
    assert out.raw + tag.raw == want
    assert fin(ctx.addr, st, tag) == ORDER
    assert enc(ctx.addr, st, src, out, 1) == ORDER
    assert dec(ctx.addr, st, src, out, 1) == ORDER
    assert aad_(ctx.addr, st, b"d", 1) == ORDER
    assert out.raw + tag.raw == want  # refused calls wrote nothing


def test_two_slice_entry_when_present(backend, kernel_sets):
    """The TLS-record entry (backends with two_slice, once it is built): equal to the spec for
    qualifying shapes (any n0: short ones through the short path, the byte by value), -7 for
    shapes it does not take."""
    k = kernel_sets(backend)
    if not k.backend.two_slice:
        assert "seal_two_slice" not in k.ops
        return
    try:
        k.address("seal_two_slice")
    except KeyError:
        pytest.skip(f"{backend}: two_slice in the table, seal_two_slice not generated yet")
    restype, argtypes, _ = abi.TWO_SLICE_SIGNATURE
    fn = ctypes.CFUNCTYPE(restype, *argtypes)(k.address("seal_two_slice"))
    a = AesGcm(b"t" * 16, backend=backend)
    for n0 in (0, 1, 15, 16, 17, 47, 48, 62, 63, 64, 65, 127, 128, 143, 255, 256, 257, 271,
               272, 300, 1023, 1024, 1039):
        for n1 in (0, 1):
            pt = rbytes(rng("2s", n0, n1), n0 + n1)
            out = ctypes.create_string_buffer(n0 + n1 + 1)
            tag = ctypes.create_string_buffer(16)
            rc = fn(a.ctx, b"n" * 12, 12, b"aad", 3, pt, n0, pt[n0:], n1, out, tag)
            assert rc == 0, (n0, n1)
            assert out.raw[:n0 + n1] + tag.raw == ref(b"t" * 16, b"n" * 12, pt, b"aad")
    out = ctypes.create_string_buffer(300)
    tag = ctypes.create_string_buffer(16)
    assert fn(a.ctx, b"n" * 13, 13, b"", 0, bytes(256), 256, b"x", 1, out, tag) == -7
    assert fn(a.ctx, b"n" * 12, 12, bytes(17), 17, bytes(256), 256, b"x", 1, out, tag) == -7
    assert fn(a.ctx, b"n" * 12, 12, b"", 0, bytes(256), 256, b"xy", 2, out, tag) == -7


def _round(block: bytes, w, rnd: int | None) -> bytes:
    """SubBytes, ShiftRows, MixColumns, then round key ``rnd`` (None: none) of the spec."""
    import numpy as np

    from vgkernels.spec import aes as spec
    state = np.frombuffer(block, dtype=np.uint8).reshape(4, 4).T.copy()  # column-major
    spec.sub_bytes(state)
    spec.shift_rows(state)
    spec.mix_columns(state)
    if rnd is not None:
        spec.add_round_key(state, w, rnd)
    return state.T.tobytes()


def _xor(a: bytes, b: bytes) -> bytes:
    return bytes(x ^ y for x, y in zip(a, b, strict=True))


@pytest.mark.parametrize("ks", [16, 32])
def test_first_round_table(backend, ks):
    """The first-round table (abi.CTX_ROUND1) of backends whose loops read it: entry v is
    R(K0 ^ v at byte 15) ^ R(K0), R = MixColumns(ShiftRows(SubBytes(.))), for all 256 v (the
    spec's round, not the kernels'); so the first round of any block x is that of x with its
    last byte zero, XOR entry x[15]."""
    from vgkernels import backends
    from vgkernels.spec import aes as spec
    if not backends.get(backend).first_round:
        pytest.skip(f"{backend}: its loops do not read the first-round table")
    key = rbytes(rng("round1", ks), ks)
    ctx = Ctx(backend, key)
    assert ctx.rc == 0
    raw = bytes((ctypes.c_uint8 * abi.CTX_SIZE).from_address(ctx.addr))
    table = [raw[abi.CTX_ROUND1 + 16 * v:abi.CTX_ROUND1 + 16 * v + 16] for v in range(256)]
    w = spec.expand_key(key)
    k0 = bytes(int(w[c, r]) for c in range(4) for r in range(4))
    base = _round(k0, w, None)
    for v in range(256):
        assert table[v] == _xor(_round(k0[:15] + bytes([k0[15] ^ v]), w, None), base), v
    r = rng("round1-blocks", ks)
    for v in (0, 1, 2, 127, 254, 255):
        x0 = rbytes(r, 15) + b"\0"
        x = x0[:15] + bytes([v])
        assert _round(_xor(x, k0), w, 1) == _xor(_round(_xor(x0, k0), w, 1), table[v])


def test_broadcast_powers_table(backend):
    """The four-lane powers (abi.CTX_BCAST) of backends whose loops read them: entry e is the
    context's own H^e in each of four lanes, its half-sum entry H^e's two qwords XORed, in both
    qwords of each lane; other backends leave the region zero."""
    from vgkernels import backends
    ctx = Ctx(backend, rbytes(rng("bcast", 16), 16))
    assert ctx.rc == 0
    raw = bytes((ctypes.c_uint8 * abi.CTX_SIZE).from_address(ctx.addr))
    region = raw[abi.CTX_BCAST:abi.CTX_SIZE]
    if not backends.get(backend).masked:
        assert region == bytes(len(region))
        return
    for e in range(4, 4 * abi.CTX_NBCAST + 1, 4):
        h = raw[abi.power_offset(e):abi.power_offset(e) + 16]
        assert h != bytes(16)
        at, fold = abi.bcast_offset(e), abi.bcast_offset(e, folded=True)
        assert raw[at:at + 64] == h * 4, e
        half = _xor(h[:8], h[8:])
        assert raw[fold:fold + 64] == (half + half) * 4, e
    with pytest.raises(ValueError):
        abi.bcast_offset(6)


def test_invariant_round_keys_only_where_nothing_writes_them():
    """The kernels load round keys with !invariant.load (`Emitter.load_invariant`), which
    promises LLVM the bytes never change: true inside every kernel call but key_init, the one
    function that writes them.  After optimisation (inlining included) key_init carries no such
    load, and the short path's pieces, where the one-block-wide backends' registers run out,
    do.  Static (no CPU feature needed)."""
    from vgkernels import listing

    prefix, text = listing.text("aesni_pclmul_avx", ir=True)
    funcs = listing.functions(text, ir=True)
    assert "!invariant.load" not in funcs[f"{prefix}_key_init"]
    assert "!invariant.load" in funcs["vg.short.enc"]


@pytest.mark.parametrize("backend", ["aesni_pclmul_avx", "aesni_pclmul"])
def test_open_pieces_load_their_own_round_keys(backend):
    """vg.short.dec's pieces load each round key where its round uses it
    (`short.keys_where_used`): no key load sits in a block that ends in the block-count
    switch, where LLVM hoisted the keys every piece loaded first (live through every piece:
    the hash-first pieces spilled).  Static (no CPU feature needed)."""
    from vgkernels import listing

    _, text = listing.text(backend, ir=True)
    blocks = re.split(r"\n(?=[\w.]+:)", listing.functions(text, ir=True)["vg.short.dec"])
    switches = [blk for blk in blocks if "switch i64" in blk]
    assert switches
    for blk in switches:
        assert "!invariant.load" not in blk, blk.split(":")[0]
