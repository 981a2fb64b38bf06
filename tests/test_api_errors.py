"""Bad input raises a precise exception before any kernel runs, and leaves every buffer the
caller passed exactly as it was; a wrong tag raises InvalidTag with the output wiped."""

from __future__ import annotations

import re

import numpy as np
import pytest
from helpers import TAG, ref
from numpy.lib.stride_tricks import as_strided

from vgkernels.abi import MAX_AAD, MAX_PLAINTEXT
from vgkernels.api import AesGcm, InvalidTag, check_lengths

KEY = bytes(range(16))
NONCE = b"\x01" * 12
AAD = b"aad-bytes"
PT = bytes(range(40))
CT_TAG = ref(KEY, NONCE, PT, AAD)
CT, GOOD_TAG = CT_TAG[:-TAG], CT_TAG[-TAG:]
NOT_BYTES = "must be a bytes-like object (bytes, bytearray, memoryview, numpy array), not "


@pytest.fixture
def aead(backend):
    return AesGcm(KEY, backend=backend)


class Untouched:
    """Snapshots of the caller's writable buffers; `check()` asserts none changed."""

    def __init__(self, *bufs):
        self.bufs = bufs
        self.before = [bytes(memoryview(b).cast("B")) for b in bufs]

    def check(self):
        for i, (b, was) in enumerate(zip(self.bufs, self.before, strict=True)):
            assert bytes(memoryview(b).cast("B")) == was, f"buffer {i} was modified"


def huge(n: int, writeable: bool = False) -> np.ndarray:
    """A zero-stride view claiming n bytes over a 1-byte allocation."""
    return as_strided(np.zeros(1, np.uint8), shape=(n,), strides=(0,), writeable=writeable)


# -- key ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("n", [0, 1, 8, 15, 17, 20, 23, 25, 31, 33, 48, 64])
def test_key_length(backend, n):
    with pytest.raises(ValueError, match=f"^key must be 16, 24 or 32 bytes, got {n}$"):
        AesGcm(bytes(n), backend=backend)


@pytest.mark.parametrize("key", [16, "k" * 16, [0] * 16, None, 1.5])
def test_key_not_a_buffer(backend, key):
    with pytest.raises(TypeError, match=re.escape("key " + NOT_BYTES + type(key).__name__)):
        AesGcm(key, backend=backend)


def test_bad_backend_or_variant(backend):
    from vgkernels.backends import BY_NAME
    from vgkernels.variant import Variant

    with pytest.raises(ValueError, match="unknown backend 'nope'; known: portable"):
        AesGcm(KEY, backend="nope")
    be = BY_NAME[backend]
    g = max(be.groups) * 2
    with pytest.raises(ValueError, match=re.escape(f"{backend}: group {g} not in {be.groups}")):
        AesGcm(KEY, backend=backend, variant=Variant(group=g))
    with pytest.raises(ValueError, match="stitch_min must lie in"):
        AesGcm(KEY, backend=backend, variant=Variant(stitch_min=1))
    with pytest.raises(ValueError, match="tail must be 'full' or 'split'"):
        AesGcm(KEY, backend=backend, variant=Variant(tail="none"))


def test_generate_key():
    for bits in (128, 192, 256):
        k1, k2 = AesGcm.generate_key(bits), AesGcm.generate_key(bits)
        assert len(k1) == bits // 8 and k1 != k2
    for bits in (0, 64, 127, 512):
        with pytest.raises(ValueError, match="bit_length must be 128, 192 or 256"):
            AesGcm.generate_key(bits)


# -- nonce ----------------------------------------------------------------------------------------

EMPTY_NONCE = "nonce must be at least 1 byte"


@pytest.mark.parametrize("nonce", [b"", bytearray(), memoryview(b""), np.zeros(0, np.uint8)])
def test_empty_nonce_everywhere(aead, nonce):
    buf, out = bytearray(PT), bytearray(b"\x99" * 64)
    keep = Untouched(buf, out)
    calls = [
        lambda: aead.encrypt(nonce, PT, AAD),
        lambda: aead.encrypt(nonce, [PT[:3], PT[3:]], AAD),
        lambda: aead.decrypt(nonce, CT_TAG, AAD),
        lambda: aead.encrypt_in_place(nonce, buf, AAD),
        lambda: aead.decrypt_in_place(nonce, buf, AAD, GOOD_TAG),
        lambda: aead.encrypt_into(out, nonce, [PT], AAD),
        lambda: aead.decrypt_into(out, nonce, CT, AAD, GOOD_TAG),
        lambda: aead.encryptor(nonce),
        lambda: aead.decryptor(nonce, AAD),
    ]
    for i, call in enumerate(calls):
        with pytest.raises(ValueError, match=EMPTY_NONCE):
            call()
        keep.check()
        assert i >= 0


# -- tag ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("n", [0, 1, 4, 8, 12, 15, 17, 32])
def test_tag_wrong_length(aead, n):
    tag = GOOD_TAG[:n] if n <= 16 else GOOD_TAG + bytes(n - 16)
    buf, out = bytearray(CT), bytearray(b"\x77" * 50)
    keep = Untouched(buf, out)
    msg = f"^tag must be {TAG} bytes, got {n}$"
    with pytest.raises(ValueError, match=msg):
        aead.decrypt_in_place(NONCE, buf, AAD, tag)
    with pytest.raises(ValueError, match=msg):
        aead.decrypt_into(out, NONCE, CT, AAD, tag)
    dec = aead.decryptor(NONCE, AAD)
    dec.update(CT)
    with pytest.raises(ValueError, match=msg):
        dec.finalize_with_tag(tag)
    keep.check()


def test_wrong_tag(aead):
    bad = bytes([GOOD_TAG[0] ^ 1]) + GOOD_TAG[1:]
    with pytest.raises(InvalidTag):
        aead.decrypt(NONCE, CT + bad, AAD)
    with pytest.raises(InvalidTag, match="shorter than the 16-byte tag"):
        aead.decrypt(NONCE, CT_TAG[:15], AAD)
    with pytest.raises(InvalidTag):
        aead.decrypt(NONCE, b"", AAD)
    buf = bytearray(CT)
    with pytest.raises(InvalidTag, match="wiped"):
        aead.decrypt_in_place(NONCE, buf, AAD, bad)
    assert buf == bytearray(len(CT))
    out = bytearray(b"\x66" * (len(CT) + 10))
    with pytest.raises(InvalidTag, match="wiped"):
        aead.decrypt_into(out, NONCE, CT, AAD, bad)
    assert out == bytearray(len(CT)) + b"\x66" * 10
    # wrong AAD / nonce / key with the right tag
    with pytest.raises(InvalidTag):
        aead.decrypt(NONCE, CT_TAG, AAD + b"!")
    with pytest.raises(InvalidTag):
        aead.decrypt(b"\x02" * 12, CT_TAG, AAD)
    with pytest.raises(InvalidTag):
        AesGcm(bytes(16), backend=aead.backend.name).decrypt(NONCE, CT_TAG, AAD)
    assert aead.decrypt(NONCE, CT_TAG, AAD) == PT


# -- lengths --------------------------------------------------------------------------------------


def test_check_lengths_bounds():
    check_lengths(0, 0)
    check_lengths(MAX_PLAINTEXT, MAX_AAD)
    assert MAX_PLAINTEXT == 2**36 - 32 and MAX_AAD == 2**61 - 1
    with pytest.raises(OverflowError, match=re.escape(
            f"data is {MAX_PLAINTEXT + 1} bytes; GCM allows at most 2^36-32 = {MAX_PLAINTEXT} "
            "bytes")):
        check_lengths(MAX_PLAINTEXT + 1, 0)
    with pytest.raises(OverflowError, match=re.escape(
            f"associated_data is {MAX_AAD + 1} bytes; GCM allows at most 2^61-1")):
        check_lengths(0, MAX_AAD + 1)
    with pytest.raises(OverflowError):
        check_lengths(2**64, 2**64)


def test_plaintext_too_long_as_pieces(aead):
    """65536 pieces of one 1 MiB buffer: 2^36 bytes, over the limit, with nothing big allocated;
    also a zero-stride view of 2^36 bytes as data."""
    mib = bytearray(b"\x3c" * 2**20)
    pieces = [memoryview(mib)] * 65536
    out = bytearray(b"\x11" * 32)
    keep = Untouched(mib, out)
    msg = re.escape(f"data is {2**36} bytes; GCM allows at most 2^36-32 = {MAX_PLAINTEXT} bytes")
    with pytest.raises(OverflowError, match=msg):
        aead.encrypt(NONCE, pieces, AAD)
    with pytest.raises(OverflowError, match=msg):
        aead.encrypt_into(out, NONCE, pieces, AAD)
    with pytest.raises(OverflowError, match=msg):
        aead.encrypt(NONCE, tuple(pieces), AAD, copy_below=False)
    keep.check()
    big = huge(2**36, writeable=True)
    with pytest.raises(OverflowError, match=msg):
        aead.encrypt(NONCE, big, AAD)
    with pytest.raises(OverflowError, match=msg):
        aead.encrypt_in_place(NONCE, big, AAD)
    with pytest.raises(OverflowError, match=msg):
        aead.decrypt_into(out, NONCE, big, AAD, GOOD_TAG)
    with pytest.raises(OverflowError, match=msg):
        aead.decrypt_in_place(NONCE, big, AAD, GOOD_TAG)
    with pytest.raises(OverflowError, match=msg):
        aead.decrypt(NONCE, huge(2**36 + TAG), AAD)
    enc = aead.encryptor(NONCE)
    with pytest.raises(OverflowError, match=msg):
        enc.update_into(big, bytearray(16))
    assert enc.update(PT) + enc.finalize() == ref(KEY, NONCE, PT, b"")
    keep.check()


def test_stream_update_too_long_does_not_allocate(aead):
    """update() checks the length before allocating its output (it once tried bytearray(2^36))."""
    msg = re.escape(f"data is {2**36} bytes; GCM allows at most 2^36-32")
    with pytest.raises(OverflowError, match=msg):
        aead.encryptor(NONCE).update(huge(2**36))
    with pytest.raises(OverflowError, match=msg):
        aead.decryptor(NONCE).update(huge(2**36))


def test_aad_too_long(aead):
    """A zero-stride view of 2^61 bytes as associated_data: OverflowError, nothing allocated."""
    aad = huge(2**61)
    buf, out = bytearray(PT), bytearray(b"\x22" * 64)
    keep = Untouched(buf, out)
    msg = re.escape(f"associated_data is {2**61} bytes; GCM allows at most 2^61-1")
    calls = [
        lambda: aead.encrypt(NONCE, PT, aad),
        lambda: aead.encrypt(NONCE, [PT[:5], PT[5:]], aad),
        lambda: aead.decrypt(NONCE, CT_TAG, aad),
        lambda: aead.encrypt_in_place(NONCE, buf, aad),
        lambda: aead.decrypt_in_place(NONCE, buf, aad, GOOD_TAG),
        lambda: aead.encrypt_into(out, NONCE, [PT], aad),
        lambda: aead.decrypt_into(out, NONCE, CT, aad, GOOD_TAG),
    ]
    for call in calls:
        with pytest.raises(OverflowError, match=msg):
            call()
        keep.check()
    # streams take AAD in pieces and refuse this view (not contiguous) or its length
    with pytest.raises((OverflowError, ValueError)):
        aead.encryptor(NONCE, aad)
    enc = aead.encryptor(NONCE)
    with pytest.raises((OverflowError, ValueError)):
        enc.authenticate_additional_data(aad)


# -- read-only, too small, overlapping ------------------------------------------------------------


def read_only_buffers(data: bytes):
    arr = np.frombuffer(bytearray(data), np.uint8)
    arr.flags.writeable = False
    return [bytes(data), memoryview(bytes(data)), memoryview(bytearray(data)).toreadonly(), arr]


@pytest.mark.parametrize("kind", range(4), ids=["bytes", "memoryview(bytes)", "toreadonly",
                                                "numpy"])
def test_read_only_for_in_place_or_out(aead, kind):
    ro = read_only_buffers(PT)[kind]
    keep = bytes(memoryview(ro))
    with pytest.raises(TypeError, match="buf is read-only"):
        aead.encrypt_in_place(NONCE, ro, AAD)
    ro_ct = read_only_buffers(CT)[kind]
    with pytest.raises(TypeError, match="buf is read-only"):
        aead.decrypt_in_place(NONCE, ro_ct, AAD, GOOD_TAG)
    with pytest.raises(TypeError, match="out is read-only"):
        aead.encrypt_into(ro, NONCE, [PT], AAD)
    with pytest.raises(TypeError, match="out is read-only"):
        aead.decrypt_into(ro_ct, NONCE, CT, AAD, GOOD_TAG)
    enc = aead.encryptor(NONCE)
    with pytest.raises(TypeError, match="out is read-only"):
        enc.update_into(PT, ro)
    assert bytes(memoryview(ro)) == keep and bytes(memoryview(ro_ct)) == CT


def test_out_too_small(aead):
    out = bytearray(b"\x44" * (len(PT) - 1))
    keep = Untouched(out)
    with pytest.raises(ValueError, match=f"^out is {len(PT) - 1} bytes, too small for "
                                         f"{len(PT)} bytes of data$"):
        aead.encrypt_into(out, NONCE, [PT[:20], PT[20:]], AAD)
    with pytest.raises(ValueError, match=f"^out is {len(PT) - 1} bytes, too small for "
                                         f"{len(PT)} bytes$"):
        aead.decrypt_into(out, NONCE, CT, AAD, GOOD_TAG)
    with pytest.raises(ValueError, match="out is too small"):
        aead.encryptor(NONCE).update_into(PT, out)
    keep.check()


def test_overlaps_refused(aead):
    mem = bytearray(range(256)) * 2
    mv = memoryview(mem)
    keep = Untouched(mem)

    def refused(msg, call):
        with pytest.raises(ValueError, match=re.escape(msg) + "; only exact in-place use"):
            call()
        keep.check()

    out = mv[0:64]
    refused("out overlaps piece 0", lambda: aead.encrypt_into(out, NONCE, [mv[8:40]], AAD))
    refused("out overlaps piece 0", lambda: aead.encrypt_into(out, NONCE, [mv[1:65]], AAD))
    refused("out overlaps piece 1",
            lambda: aead.encrypt_into(out, NONCE, [b"abcd", mv[0:28]], AAD))
    refused("out overlaps piece 1",
            lambda: aead.encrypt_into(out, NONCE, [mv[0:16], mv[0:16]], AAD))
    refused("out overlaps piece 0", lambda: aead.encrypt_into(mv[16:48], NONCE, [mv[0:32]], AAD))
    # only the first len(PT) = 40 bytes of `out` are written: overlap counts there
    refused("out overlaps nonce", lambda: aead.encrypt_into(out, mv[30:42], [PT], AAD))
    refused("out overlaps associated_data",
            lambda: aead.encrypt_into(out, NONCE, [PT], mv[39:50]))
    refused("out overlaps piece 0",
            lambda: aead.encrypt_into(out, NONCE, [mv[5:45]], AAD, copy_below=(999, 999)))
    refused("out overlaps piece 1",
            lambda: aead.encrypt_into(out, NONCE, [mv[0:16], mv[17:41]], AAD))
    refused("buf overlaps nonce", lambda: aead.encrypt_in_place(mv[100:112], mv[100:112], AAD))
    refused("buf overlaps nonce", lambda: aead.encrypt_in_place(mv[95:107], mv[100:140], AAD))
    refused("buf overlaps associated_data",
            lambda: aead.encrypt_in_place(NONCE, mv[100:140], mv[139:150]))
    refused("buf overlaps tag",
            lambda: aead.decrypt_in_place(NONCE, mv[100:140], AAD, mv[130:146]))
    refused("buf overlaps nonce",
            lambda: aead.decrypt_in_place(mv[139:151], mv[100:140], AAD, GOOD_TAG))
    refused("out overlaps data",
            lambda: aead.decrypt_into(mv[200:240], NONCE, mv[210:250], AAD, GOOD_TAG))
    refused("out overlaps tag",
            lambda: aead.decrypt_into(mv[200:240], NONCE, CT, AAD, mv[239:255]))
    refused("out overlaps associated_data",
            lambda: aead.decrypt_into(mv[200:240], NONCE, CT, mv[190:201], GOOD_TAG))
    enc = aead.encryptor(NONCE)
    refused("out overlaps data", lambda: enc.update_into(mv[300:340], mv[301:341]))
    # adjacent is not overlapping, and exact in place is allowed
    assert enc.update_into(mv[300:340], mv[340:380]) == 40
    want = ref(KEY, NONCE, bytes(mem[300:340]) * 2, b"")
    assert enc.update_into(mv[300:340], mv[300:340]) == 40
    assert bytes(mem[340:380]) + bytes(mem[300:340]) + enc.finalize() == want


# -- not a buffer ---------------------------------------------------------------------------------


@pytest.mark.parametrize("bad", [7, "text", [1, 2, 3], None, 2.5, {"a": 1}])
def test_not_a_buffer(aead, bad):
    name = type(bad).__name__
    buf, out = bytearray(PT), bytearray(64)
    keep = Untouched(buf, out)

    def raises(what, call):
        with pytest.raises(TypeError, match=re.escape(f"{what} {NOT_BYTES}")):
            call()
        keep.check()

    if bad is not None:
        raises("associated_data", lambda: aead.encrypt(NONCE, PT, bad))
        raises("associated_data", lambda: aead.encrypt_in_place(NONCE, buf, bad))
    raises("nonce", lambda: aead.encrypt(bad, PT, AAD))
    raises("nonce", lambda: aead.decrypt_in_place(bad, buf, AAD, GOOD_TAG))
    raises("nonce", lambda: aead.encryptor(bad))
    raises("tag", lambda: aead.decrypt_in_place(NONCE, buf, AAD, bad))
    raises("tag", lambda: aead.decrypt_into(out, NONCE, CT, AAD, bad))
    raises("out", lambda: aead.encrypt_into(bad, NONCE, [PT], AAD))
    raises("out", lambda: aead.decrypt_into(bad, NONCE, CT, AAD, GOOD_TAG))
    raises("buf", lambda: aead.encrypt_in_place(NONCE, bad, AAD))
    raises("data", lambda: aead.decrypt(NONCE, bad, AAD))
    raises("data", lambda: aead.encryptor(NONCE).update(bad))
    if isinstance(bad, list):  # a list is a list of pieces: its items are checked
        raises("data piece", lambda: aead.encrypt(NONCE, bad, AAD))
        raises("data piece", lambda: aead.encrypt_into(out, NONCE, bad, AAD))
    else:
        raises("data", lambda: aead.encrypt(NONCE, bad, AAD))
        raises("data piece", lambda: aead.encrypt_into(out, NONCE, bad, AAD))
    raises("data piece", lambda: aead.encrypt(NONCE, [PT, bad], AAD))
    assert name


# -- closed ---------------------------------------------------------------------------------------


def test_closed(backend):
    a = AesGcm(KEY, backend=backend)
    enc = a.encryptor(NONCE, AAD)
    raw = a._holder
    assert any(bytes(raw))
    with a as same:
        assert same is a
        assert same.encrypt(NONCE, PT, AAD) == CT_TAG
    assert not any(bytes(raw)), "round keys and powers of H not wiped"
    a.close()  # twice is fine
    buf, out = bytearray(PT), bytearray(64)
    keep = Untouched(buf, out)
    for call in (lambda: a.encrypt(NONCE, PT, AAD), lambda: a.decrypt(NONCE, CT_TAG, AAD),
                 lambda: a.encrypt_in_place(NONCE, buf, AAD),
                 lambda: a.decrypt_in_place(NONCE, buf, AAD, GOOD_TAG),
                 lambda: a.encrypt_into(out, NONCE, [PT], AAD),
                 lambda: a.decrypt_into(out, NONCE, CT, AAD, GOOD_TAG),
                 lambda: a.encryptor(NONCE), lambda: enc.update(PT), enc.finalize):
        with pytest.raises(ValueError, match="this AesGcm was closed"):
            call()
        keep.check()
