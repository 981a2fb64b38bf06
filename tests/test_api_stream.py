"""Streaming: encryptor()/decryptor() with chunks of every size 1..33 (and random chunkings)
equal the one-shot result; AAD in several chunks; the order rules (AAD after data, finalize
twice, use after finalize) raise."""

from __future__ import annotations

import pytest
from helpers import BY_NAME, TAG, rbytes, ref, rng
from hypothesis import given, settings
from hypothesis import strategies as st

from vgkernels.api import AesGcm, InvalidTag

KEY = bytes(range(100, 124))  # AES-192
NONCE = bytes(range(12))


def chunked(data: bytes, size: int) -> list[bytes]:
    return [data[i:i + size] for i in range(0, len(data), size)]


def text_len(backend: str) -> int:
    return 2 * 16 * BY_NAME[backend].group + 41  # two groups and change


def test_encrypt_chunks_every_size(backend):
    n = text_len(backend)
    pt = rbytes(rng("stream", n), n)
    aad = b"header-aad-31-bytes-long-------"
    want = ref(KEY, NONCE, pt, aad)
    a = AesGcm(KEY, backend=backend)
    g = BY_NAME[backend].group
    for size in [*range(1, 34), 16 * g - 1, 16 * g, 16 * g + 1, 32 * g + 5]:
        enc = a.encryptor(NONCE, aad)
        got = b"".join(enc.update(c) for c in chunked(pt, size))
        assert got + enc.finalize() == want, ("update", size)
        enc = a.encryptor(NONCE)
        enc.authenticate_additional_data(aad)
        out = bytearray(n)
        mv = memoryview(out)
        for i in range(0, n, size):
            assert enc.update_into(pt[i:i + size], mv[i:i + size]) == len(pt[i:i + size])
        assert bytes(out) + enc.finalize() == want, ("update_into", size)


def test_decrypt_chunks_every_size(backend):
    n = text_len(backend)
    pt = rbytes(rng("stream-d", n), n)
    aad = b"aad"
    want = ref(KEY, NONCE, pt, aad)
    ct, tag = want[:-TAG], want[-TAG:]
    a = AesGcm(KEY, backend=backend)
    g = BY_NAME[backend].group
    for size in [*range(1, 34), 16 * g - 1, 16 * g, 16 * g + 1, 32 * g + 5]:
        dec = a.decryptor(NONCE, aad)
        got = b"".join(dec.update(c) for c in chunked(ct, size))
        assert dec.finalize_with_tag(tag) is None
        assert got == pt, size
        # in place, chunk by chunk
        buf = bytearray(ct)
        mv = memoryview(buf)
        dec = a.decryptor(NONCE, aad)
        for i in range(0, n, size):
            dec.update_into(mv[i:i + size], mv[i:i + size])
        dec.finalize_with_tag(tag)
        assert bytes(buf) == pt, ("in place", size)


def test_aad_in_chunks(backend):
    a = AesGcm(KEY, backend=backend)
    pt = rbytes(rng("aadc"), 70)
    for aad_len in (0, 1, 15, 16, 17, 33, 100, 257):
        aad = rbytes(rng("aad", aad_len), aad_len)
        want = ref(KEY, NONCE, pt, aad)
        for sizes in ([1], [3, 0, 5], [16], [7, 16, 1], [aad_len or 1]):
            enc = a.encryptor(NONCE)
            pos, i = 0, 0
            while pos < aad_len:
                size = sizes[i % len(sizes)]
                enc.authenticate_additional_data(aad[pos:pos + size])
                pos += size
                i += 1
            enc.authenticate_additional_data(b"")
            got = enc.update(pt[:33]) + enc.update(pt[33:])
            assert got + enc.finalize() == want, (aad_len, sizes)
            # the first AAD chunk given to encryptor() itself, the rest later
            enc = a.encryptor(NONCE, aad[:5])
            enc.authenticate_additional_data(aad[5:])
            assert enc.update(pt) + enc.finalize() == want, (aad_len, "split at 5")


def test_empty_stream(backend):
    a = AesGcm(KEY, backend=backend)
    enc = a.encryptor(NONCE)
    assert enc.update(b"") == b""
    assert enc.finalize() == ref(KEY, NONCE, b"", b"")
    dec = a.decryptor(NONCE, b"x")
    dec.finalize_with_tag(ref(KEY, NONCE, b"", b"x"))


def test_aad_after_data_raises(backend):
    a = AesGcm(KEY, backend=backend)
    enc = a.encryptor(NONCE, b"first")
    head = enc.update(b"data")
    with pytest.raises(ValueError, match="associated data must come before the data"):
        enc.authenticate_additional_data(b"late")
    # the refused AAD did not change the result
    assert head + enc.update(b"more") + enc.finalize() == ref(KEY, NONCE, b"datamore", b"first")
    dec = a.decryptor(NONCE)
    dec.update(b"x" * 17)
    with pytest.raises(ValueError, match="associated data must come before the data"):
        dec.authenticate_additional_data(b"late")


def test_finalize_twice_and_use_after_finalize(backend):
    a = AesGcm(KEY, backend=backend)
    enc = a.encryptor(NONCE)
    enc.update(b"abc")
    tag = enc.finalize()
    assert tag == ref(KEY, NONCE, b"abc", b"")[-TAG:]
    for call in (enc.finalize, lambda: enc.update(b"x"),
                 lambda: enc.update_into(b"x", bytearray(1)),
                 lambda: enc.authenticate_additional_data(b"x")):
        with pytest.raises(ValueError, match="this stream is finished"):
            call()
    dec = a.decryptor(NONCE)
    assert dec.update(ref(KEY, NONCE, b"abc", b"")[:-TAG]) == b"abc"
    dec.finalize_with_tag(tag)
    with pytest.raises(ValueError, match="this stream is finished"):
        dec.finalize_with_tag(tag)
    with pytest.raises(ValueError, match="this stream is finished"):
        dec.update(b"x")


def test_decryptor_wrong_tag(backend):
    a = AesGcm(KEY, backend=backend)
    want = ref(KEY, NONCE, b"payload" * 5, b"aad")
    dec = a.decryptor(NONCE, b"aad")
    dec.update(want[:-TAG])
    with pytest.raises(InvalidTag):
        dec.finalize_with_tag(bytes([want[-TAG] ^ 0x80]) + want[-TAG + 1:])
    # a wrong-length tag is refused before the stream is finished; the right tag then works
    dec = a.decryptor(NONCE, b"aad")
    dec.update(want[:-TAG])
    with pytest.raises(ValueError, match="tag must be 16 bytes, got 15"):
        dec.finalize_with_tag(want[-TAG:-1])
    dec.finalize_with_tag(want[-TAG:])


def test_update_into_out_too_small_leaves_stream_usable(backend):
    a = AesGcm(KEY, backend=backend)
    enc = a.encryptor(NONCE)
    out = bytearray(b"\x01" * 4)
    with pytest.raises(ValueError, match="out is too small for 5 bytes"):
        enc.update_into(b"hello", out)
    assert out == b"\x01" * 4
    assert enc.update(b"hello") + enc.finalize() == ref(KEY, NONCE, b"hello", b"")


@settings(max_examples=40)
@given(n=st.integers(0, 2000), sizes=st.lists(st.integers(0, 300), min_size=1, max_size=12),
       aad_sizes=st.lists(st.integers(0, 40), max_size=5), nl=st.integers(1, 30),
       seed=st.integers(0, 2**32))
def test_random_chunkings(backend, n, sizes, aad_sizes, nl, seed):
    r = rng(seed)
    pt, nonce = rbytes(r, n), rbytes(r, nl)
    aad_parts = [rbytes(r, s) for s in aad_sizes]
    aad = b"".join(aad_parts)
    want = ref(KEY, nonce, pt, aad)
    a = AesGcm(KEY, backend=backend)
    enc, dec = a.encryptor(nonce), a.decryptor(nonce)
    for p in aad_parts:
        enc.authenticate_additional_data(p)
        dec.authenticate_additional_data(p)
    got, back, pos = bytearray(), bytearray(), 0
    for size in [*sizes, n]:  # the chunk sizes once (empty ones included), then the rest
        chunk = pt[pos:pos + size]
        c = enc.update(chunk)
        assert len(c) == len(chunk)
        got += c
        back += dec.update(c)
        pos += len(chunk)
    assert bytes(got) + enc.finalize() == want
    dec.finalize_with_tag(want[-TAG:])
    assert bytes(back) == pt


def test_interleaved_streams(backend):
    """Streams of one AesGcm keep separate state: interleaving their calls changes nothing."""
    a = AesGcm(KEY, backend=backend)
    texts = [rbytes(rng("il", i), 150 + 37 * i) for i in range(3)]
    nonces = [bytes([i]) * (12 if i else 7) for i in range(3)]
    encs = [a.encryptor(nonces[i], b"aad%d" % i) for i in range(3)]
    decs = [a.decryptor(nonces[i], b"aad%d" % i) for i in range(3)]
    cts = [bytearray() for _ in range(3)]
    pts = [bytearray() for _ in range(3)]
    for pos in range(0, 300, 23):
        for i in range(3):
            c = encs[i].update(texts[i][pos:pos + 23])
            cts[i] += c
            pts[i] += decs[i].update(c)
    for i in range(3):
        want = ref(KEY, nonces[i], texts[i], b"aad%d" % i)
        tag = encs[i].finalize()
        assert bytes(cts[i]) + tag == want, i
        decs[i].finalize_with_tag(tag)
        assert bytes(pts[i]) == texts[i], i
