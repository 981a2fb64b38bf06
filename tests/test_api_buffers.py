"""Every bytes-like input works: bytes, bytearray, memoryview (slices, casts), array.array,
numpy arrays of any dtype and any number of dimensions when C-contiguous; non-contiguous views
raise ValueError naming the argument, with the caller's buffers untouched."""

from __future__ import annotations

import array

import numpy as np
import pytest
from helpers import TAG, rbytes, ref, rng

from vgkernels.api import AesGcm

KEY = bytes(range(32))
NONCE = bytes(range(12))
AAD = bytes(range(24))
PT = rbytes(rng("buffers"), 96)
WANT = ref(KEY, NONCE, PT, AAD)
CT, TAG_ = WANT[:-TAG], WANT[-TAG:]


def forms(data: bytes) -> dict[str, object]:
    """The same bytes in many buffer types (all C-contiguous)."""
    n = len(data)
    big = bytearray(b"\xff" * 7) + bytearray(data) + bytearray(b"\xff" * 9)
    out: dict[str, object] = {
        "bytes": bytes(data),
        "bytearray": bytearray(data),
        "memoryview": memoryview(data),
        "memoryview-slice": memoryview(big)[7:7 + n],
        "numpy-u8": np.frombuffer(data, np.uint8).copy(),
        "numpy-slice": np.frombuffer(bytes(big), np.uint8)[7:7 + n].copy()[0:n],
        "array-B": array.array("B", data),
    }
    if n % 4 == 0 and n:
        out["numpy-u32"] = np.frombuffer(data, np.uint32).copy()
        out["memoryview-cast-I"] = memoryview(bytearray(data)).cast("I")
        out["array-I"] = array.array("I", data)
        out["numpy-2d"] = np.frombuffer(data, np.uint8).copy().reshape(4, n // 4)
        out["numpy-2d-u16"] = np.frombuffer(data, np.uint16).copy().reshape(2, n // 4)
        out["memoryview-2d"] = memoryview(bytearray(data)).cast("B", (4, n // 4))
        out["numpy-3d-u32"] = np.frombuffer(data, np.uint32).copy().reshape(n // 4, 1, 1)
        out["numpy-3d"] = np.frombuffer(data, np.uint8).copy().reshape(2, 2, n // 4)
    if n % 8 == 0 and n:
        out["numpy-f64"] = np.frombuffer(data, np.float64).copy()
    return out


def writable_forms(data: bytes) -> dict[str, object]:
    return {k: v for k, v in forms(data).items()
            if not memoryview(v).readonly}


def raw(obj) -> bytes:
    return bytes(memoryview(obj).cast("B")) if memoryview(obj).ndim <= 1 else \
        np.asarray(obj).tobytes()


@pytest.fixture
def aead(backend):
    return AesGcm(KEY, backend=backend)


@pytest.mark.parametrize("kind", list(forms(bytes(96))))
def test_input_forms(backend, kind):
    key, nonce, aad, pt = (forms(x).get(kind, x) for x in (KEY, NONCE, AAD, PT))
    a = AesGcm(key, backend=backend)
    assert a.encrypt(nonce, pt, aad) == WANT
    assert a.encrypt(nonce, [pt, b""], aad) == WANT
    assert a.decrypt(nonce, forms(WANT).get(kind, WANT), aad) == PT
    assert a.decrypt(nonce, forms(WANT)["bytes"], aad) == PT
    enc = a.encryptor(nonce, aad)
    assert enc.update(pt) + enc.finalize() == WANT
    dec = a.decryptor(nonce, aad)
    assert dec.update(forms(CT)[kind]) == PT
    dec.finalize_with_tag(forms(TAG_)[kind])


@pytest.mark.parametrize("kind", list(writable_forms(bytes(96))))
def test_in_place_and_out_forms(aead, kind):
    buf = writable_forms(PT)[kind]
    assert aead.encrypt_in_place(NONCE, buf, AAD) == TAG_
    assert raw(buf) == CT
    aead.decrypt_in_place(NONCE, buf, AAD, forms(TAG_)["numpy-u32"])
    assert raw(buf) == PT
    out = writable_forms(bytes(96))[kind]
    assert aead.encrypt_into(out, NONCE, [PT[:10], PT[10:]], AAD) == TAG_
    assert raw(out) == CT
    out = writable_forms(bytes(96))[kind]
    aead.decrypt_into(out, NONCE, CT, AAD, TAG_)
    assert raw(out) == PT
    out = writable_forms(bytes(96))[kind]
    enc = aead.encryptor(NONCE, AAD)
    enc.update_into(PT, out)
    assert raw(out) == CT and enc.finalize() == TAG_


def test_long_nonce_and_pieces_of_mixed_types(aead):
    nonce = rbytes(rng("long-nonce"), 1000)
    want = ref(KEY, nonce, PT, AAD)
    pieces = [np.frombuffer(PT[:20], np.uint8), memoryview(PT)[20:36],
              bytearray(PT[36:50]), array.array("B", PT[50:64]),
              np.frombuffer(PT[64:], np.uint8).reshape(4, 8)]
    assert aead.encrypt(np.frombuffer(nonce, np.uint8).reshape(10, 100), pieces, AAD) == want
    assert aead.decrypt(nonce, want, AAD) == PT


@pytest.mark.parametrize("shape", [(0, 16), (3, 0)])
def test_empty_multidimensional_arrays(aead, shape):
    """An empty C-contiguous array of any shape is an empty buffer (it once raised memoryview's
    own 'cannot cast view with zeros in shape or strides')."""
    empty = np.zeros(shape, np.uint8)
    want = ref(KEY, NONCE, b"", AAD)
    assert aead.encrypt(NONCE, empty, AAD) == want
    assert aead.encrypt(NONCE, [PT, empty], empty) == ref(KEY, NONCE, PT, b"")
    assert aead.decrypt(NONCE, ref(KEY, NONCE, b"", b""), np.zeros(shape, np.uint32)) == b""
    assert aead.decrypt(NONCE, want, AAD) == b""
    assert aead.encrypt_in_place(NONCE, np.zeros(shape, np.uint8), AAD) == want[-TAG:]


def test_empty_forms(aead):
    want = ref(KEY, NONCE, b"", b"")
    for empty in (b"", bytearray(), memoryview(b""), np.zeros(0, np.uint8),
                  np.zeros(0, np.uint32), array.array("I")):
        assert aead.encrypt(NONCE, empty, empty) == want
        assert aead.encrypt(NONCE, [empty, empty], empty) == want
        assert aead.decrypt(NONCE, want, empty) == b""
        assert aead.encrypt_into(bytearray(), NONCE, [empty], None) == want
        buf = bytearray()
        assert aead.encrypt_in_place(NONCE, buf, empty) == want


# -- non-contiguous -------------------------------------------------------------------------------


def strided(data: bytes) -> dict[str, object]:
    """Views of `data` (every other byte of a doubled buffer, etc.) that are not C-contiguous."""
    n = len(data)
    doubled = np.zeros(2 * n, np.uint8)
    doubled[::2] = np.frombuffer(data, np.uint8)
    wide = np.zeros((4, n // 2), np.uint8)
    wide[:, :n // 4] = np.frombuffer(data, np.uint8).reshape(4, n // 4)
    return {
        "numpy-step2": doubled[::2],
        "numpy-reversed": np.frombuffer(data, np.uint8)[::-1].copy()[::-1],
        "numpy-columns": wide[:, :n // 4],
        "numpy-fortran": np.asfortranarray(np.frombuffer(data, np.uint8).reshape(4, n // 4)),
        "memoryview-step2": memoryview(bytearray(doubled.tobytes()))[::2],
    }


@pytest.mark.parametrize("kind", list(strided(bytes(16))))
def test_non_contiguous_raise(aead, kind):
    for v in strided(bytes(16)).values():
        assert not memoryview(v).c_contiguous

    def s(x):
        return strided(x)[kind]

    buf, out = bytearray(PT), bytearray(b"\x13" * 96)
    before = (bytes(buf), bytes(out))
    checks = [
        ("key", lambda: AesGcm(s(KEY), backend=aead.backend.name)),
        ("nonce", lambda: aead.encrypt(s(NONCE), PT, AAD)),
        ("associated_data", lambda: aead.encrypt(NONCE, PT, s(AAD))),
        ("associated_data", lambda: aead.encrypt_in_place(NONCE, buf, s(AAD))),
        ("data", lambda: aead.encrypt(NONCE, s(PT), AAD)),
        ("data", lambda: aead.decrypt(NONCE, s(WANT), AAD)),
        ("data piece", lambda: aead.encrypt(NONCE, [PT[:8], s(PT[8:])], AAD)),
        ("data piece", lambda: aead.encrypt_into(out, NONCE, [s(PT)], AAD)),
        ("buf", lambda: aead.encrypt_in_place(NONCE, s(PT), AAD)),
        ("buf", lambda: aead.decrypt_in_place(NONCE, s(CT), AAD, TAG_)),
        ("tag", lambda: aead.decrypt_in_place(NONCE, buf, AAD, s(TAG_))),
        ("out", lambda: aead.encrypt_into(s(bytes(96)), NONCE, [PT], AAD)),
        ("out", lambda: aead.decrypt_into(s(bytes(96)), NONCE, CT, AAD, TAG_)),
        ("data", lambda: aead.decrypt_into(out, NONCE, s(CT), AAD, TAG_)),
        ("data", lambda: aead.encryptor(NONCE).update(s(PT))),
        ("out", lambda: aead.encryptor(NONCE).update_into(PT, s(bytes(96)))),
        ("associated_data", lambda: aead.encryptor(NONCE, s(AAD))),
    ]
    for name, call in checks:
        with pytest.raises(ValueError, match=f"^{name} must be C-contiguous$"):
            call()
        assert (bytes(buf), bytes(out)) == before, name
