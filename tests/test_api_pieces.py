"""Encrypting a list of pieces (seal_gather, copy+seal, the TLS two-slice shape) gives exactly
the one-shot result, for every way of cutting the text, on every backend."""

from __future__ import annotations

import pytest
from helpers import BY_NAME, TAG, rbytes, ref, rng
from hypothesis import given, settings
from hypothesis import strategies as st

from vgkernels.api import AesGcm
from vgkernels.backends import get
from vgkernels.binding import binding
from vgkernels.kernels.gather import COPY_UPTO, RECORD_COPY
from vgkernels.kernels.short import piece_blocks

KEY = bytes(range(32))
NONCE = bytes(range(50, 62))
AAD = b"pieces-aad"


class Spy:
    """Which kernel `encrypt_pieces` took (the binding's path counters): `calls` lists the
    kernels run since the last `clear`, as two_slice / seal (copy first) / seal_gather."""

    NAMES = {"seal_two_slice": "two_slice", "seal": "seal", "seal_gather": "seal_gather"}

    def __init__(self, a: AesGcm):
        self._b = binding(a._k)
        self._base = self._b.paths()

    @property
    def calls(self) -> list[str]:
        now = self._b.paths()
        return sorted(self.NAMES[p] for p, n in now.items() for _ in range(n - self._base[p]))

    def clear(self) -> None:
        self._base = self._b.paths()


def spied(backend: str, key: bytes = KEY) -> tuple[AesGcm, Spy]:
    a = AesGcm(key, backend=backend)
    return a, Spy(a)


def check(a: AesGcm, pieces, want: bytes, copy_below, where) -> None:
    total = sum(len(p) for p in pieces)
    got = a.encrypt(NONCE, [bytes(p) for p in pieces], AAD, copy_below=copy_below)
    assert got == want, (where, [len(p) for p in pieces], copy_below)
    out = bytearray(b"\xee") * (total + 3)
    tag = a.encrypt_into(out, NONCE, pieces, AAD, copy_below=copy_below)
    assert bytes(out[:total]) + tag == want, (where, [len(p) for p in pieces], copy_below)
    assert out[total:] == b"\xee" * 3, (where, "wrote past the text")


def lengths_for(backend: str) -> list[int]:
    g = BY_NAME[backend].group
    return sorted({0, 1, 15, 16, 17, 31, 32, 33, 47, 48, 49, 100, 16 * g - 1, 16 * g + 1,
                   32 * g + 7, 64 * g + 15})


def test_standard_shapes(backend):
    """One piece; 16 bytes then the rest; 1 byte then the rest; the rest then 1 byte; empty
    pieces around; an empty list."""
    a = AesGcm(KEY, backend=backend)
    for n in lengths_for(backend):
        pt = rbytes(rng("shapes", n), n)
        want = ref(KEY, NONCE, pt, AAD)
        shapes = [[pt], [pt[:16], pt[16:]], [pt[:1], pt[1:]], [pt[:-1], pt[-1:]],
                  [b"", pt, b""], [pt[:n // 2], b"", b"", pt[n // 2:]]]
        for pieces in shapes:
            for copy_below in (False, None, (n + 1, n + 1)):
                check(a, pieces, want, copy_below, f"{backend} n={n}")
    assert a.encrypt(NONCE, [], AAD, copy_below=False) == ref(KEY, NONCE, b"", AAD)
    assert a.encrypt(NONCE, (), AAD) == ref(KEY, NONCE, b"", AAD)


def test_split_at_every_offset(backend):
    """Two pieces cut at every offset 0..47 (the first three blocks) and at every offset within
    17 bytes of each group boundary up to 4 groups, through the raw gather; also three pieces
    with a short middle piece."""
    g = BY_NAME[backend].group
    n = 16 * 4 * g + 9
    pt = rbytes(rng("offsets", backend), n)
    want = ref(KEY, NONCE, pt, AAD)
    a = AesGcm(KEY, backend=backend)
    cuts = set(range(48))
    for m in range(1, 5):
        cuts |= {16 * g * m + d for d in range(-17, 18)}
    cuts = sorted(c for c in cuts if 0 <= c <= n)
    for k in cuts:
        got = a.encrypt(NONCE, [pt[:k], pt[k:]], AAD, copy_below=False)
        assert got == want, (backend, "cut", k)
    step = 3 if backend == "portable" else 1
    for k in cuts[::step]:
        j = k + 1 + k % 19
        got = a.encrypt(NONCE, [pt[:k], pt[k:j], pt[j:]], AAD, copy_below=False)
        assert got == want, (backend, "cuts", k, j)


def test_short_messages_through_the_gather(backend):
    """Every text of 0..16 * piece_blocks + 1 bytes (the short path's limit on both sides) as
    one piece, two pieces cut at every offset and three pieces, with AAD of 0, 13, 16 and 17
    bytes, through the raw gather (copy_below=False); also the first piece already at its
    place in the output (in place) and the output's bytes past the text left alone."""
    r = rng("short-gather", backend)
    a = AesGcm(KEY, backend=backend)
    for al in (0, 13, 16, 17):
        aad = rbytes(r, al)
        for n in range(16 * piece_blocks(get(backend)) + 2):
            pt = rbytes(r, n)
            want = ref(KEY, NONCE, pt, aad)
            where = (backend, al, n)
            assert a.encrypt(NONCE, [pt], aad, copy_below=False) == want, where
            for k in range(n + 1):
                got = a.encrypt(NONCE, [pt[:k], pt[k:]], aad, copy_below=False)
                assert got == want, where + ("cut", k)
            j = (n * 7) // 10
            k = j // 3
            assert a.encrypt(NONCE, [pt[:k], pt[k:j], pt[j:]], aad, copy_below=False) == want
            out = bytearray(pt[:k] + bytes(n - k) + b"\xa5" * 16)
            tag = a.encrypt_into(out, NONCE, [memoryview(out)[:k], pt[k:]], aad,
                                 copy_below=False)
            assert bytes(out[:n]) + bytes(tag) == want and out[n:] == b"\xa5" * 16, where


def test_two_pieces_around_copy_upto(backend):
    """Two pieces whose text seal_gather copies into the output and seals there (at most
    COPY_UPTO bytes, unmasked backends) and just past that: cuts near both ends, the middle and
    block boundaries, a 96-bit and another nonce, the first piece already in place, nothing
    written past the text."""
    a = AesGcm(KEY, backend=backend)
    sizes = [129, 200, 255, 256, 511, 1000, COPY_UPTO - 1, COPY_UPTO, COPY_UPTO + 1, 2000]
    for n in sizes if backend != "portable" else sizes[::3]:
        r = rng("copy-upto", backend, n)
        pt = rbytes(r, n)
        cuts = sorted({c for c in (0, 1, 2, 3, 4, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65,
                                   n // 2, n // 2 + 1) if c <= n} | {n - d for d in range(18)})
        for nonce in (NONCE, rbytes(r, 16)):
            want = ref(KEY, nonce, pt, AAD)
            for k in cuts:
                got = a.encrypt(nonce, [pt[:k], pt[k:]], AAD, copy_below=False)
                assert got == want, (backend, n, k, len(nonce))
            for k in cuts[::4]:
                out = bytearray(pt[:k] + bytes(n - k) + b"\xa5" * 16)
                tag = a.encrypt_into(out, nonce, [memoryview(out)[:k], pt[k:]], AAD,
                                     copy_below=False)
                assert bytes(out[:n]) + bytes(tag) == want, (backend, n, k, "in place")
                assert out[n:] == b"\xa5" * 16, (backend, n, k, "wrote past the text")


def test_records_of_whole_groups_through_the_gather(backend):
    """Records (n bytes then one) whose text is a multiple of 128 bytes, which seal_gather
    copies on some backends (RECORD_COPY), their neighbours and the bounds, through seal_gather
    (a nonce or AAD the two-slice entry does not take): also in place and with nothing
    written past the text."""
    a, spy = spied(backend)
    lo, hi = RECORD_COPY
    ns = sorted({lo - 1, lo - 2, lo, 1279, 2047, 2048, 2175, hi - 1, hi, hi + 127})
    for n in ns if backend != "portable" else ns[::3]:
        r = rng("groups", backend, n)
        pt = rbytes(r, n + 1)
        for nonce, aad in ((rbytes(r, 16), AAD), (NONCE, rbytes(r, 17))):
            want = ref(KEY, nonce, pt, aad)
            spy.clear()
            got = a.encrypt(nonce, [pt[:n], pt[n:]], aad, copy_below=False)
            assert got == want, (backend, n)
            assert spy.calls == ["seal_gather"], spy.calls
            out = bytearray(b"\xee") * (n + 4)
            tag = a.encrypt_into(out, nonce, [pt[:n], pt[n:]], aad, copy_below=False)
            assert bytes(out[:n + 1]) + tag == want and out[n + 1:] == b"\xee" * 3, (backend, n)
            out = bytearray(pt)
            mv = memoryview(out)
            tag = a.encrypt_into(out, nonce, [mv[:n], mv[n:]], aad, copy_below=False)
            assert bytes(out) + tag == want, (backend, n, "in place")
            got = a.encrypt(nonce, [pt[:n], b""], aad, copy_below=False)
            assert got == ref(KEY, nonce, pt[:n], aad), (backend, n, "no byte")


def test_short_records_take_the_two_slice_entry(backend):
    """A record of any length below 256 bytes (n bytes then one) goes to the two-slice entry
    where it is built: the short path with the byte by value up to its limit, the stitched call
    or (a byte completing a block) a copy and an in-place seal above."""
    a = AesGcm(KEY, backend=backend)
    s, spy = spied(backend)
    for n in (0, 1, 15, 16, 31, 62, 63, 64, 65, 79, 127, 128, 143, 200, 255):
        r = rng("tls-short", n)
        pt, aad = rbytes(r, n + 1), rbytes(r, n % 17)
        want = ref(KEY, NONCE, pt, aad)
        spy.clear()
        assert s.encrypt(NONCE, [pt[:n], pt[n:]], aad) == want, (backend, n)
        if a.backend.two_slice:  # else copy or gather, as copy_below says
            assert spy.calls == ["two_slice"], (backend, n, spy.calls)
        assert a.encrypt(NONCE, [pt[:n], pt[n:]], aad, copy_below=False) == want, (backend, n)


def tls_lengths(backend: str) -> list[int]:
    """n in 256..1100 with every residue mod 16 appearing several times (5, or 3 on the slow
    portable backend)."""
    per = 3 if backend == "portable" else 5
    r = rng("tls", backend)
    out = []
    for res in range(16):
        ks = r.sample(range((1100 - 256 - res) // 16 + 1), per)
        out += [256 + res + 16 * k for k in ks]
    return sorted(out)


def test_tls_record_shape(backend):
    """n bytes of record then 1 byte of content type (12-byte nonce, AAD <= 16 bytes: the shape
    the two-slice entry takes where it exists), and near-misses of that shape."""
    a = AesGcm(KEY, backend=backend)
    has_two_slice = a.backend.two_slice
    lens = tls_lengths(backend)
    assert {n % 16 for n in lens} == set(range(16)) and min(lens) >= 256 and max(lens) <= 1100
    for n in lens:
        r = rng("tls-case", n)
        pt = rbytes(r, n + 1)
        nonce, aad = rbytes(r, 12), rbytes(r, n % 17)  # 0..16 bytes
        want = ref(KEY, nonce, pt, aad)
        for copy_below in (None, False):
            got = a.encrypt(nonce, [pt[:n], pt[n:]], aad, copy_below=copy_below)
            assert got == want, (backend, n, len(aad), copy_below)
            out = bytearray(n + 1)
            tag = a.encrypt_into(out, nonce, [pt[:n], pt[n:]], aad, copy_below=copy_below)
            assert bytes(out) + tag == want, (backend, n, "into")
        # a zero-byte second piece; shapes just outside the two-slice conditions
        assert a.encrypt(nonce, [pt[:n], b""], aad) == ref(KEY, nonce, pt[:n], aad)
        # the dispatch: the two-slice entry where it is built, and nothing else
        s, spy = spied(backend)
        assert s.encrypt(nonce, [pt[:n], pt[n:]], aad) == want
        assert spy.calls == (["two_slice"] if has_two_slice else ["seal_gather"]), spy.calls
    g = BY_NAME[backend].group
    big = sorted({16 * g * k + d for k in (2, 3, 5) for d in (-1, 0, 1, 7)} | {16384, 16385})
    for n in big if backend != "portable" else big[::3]:
        pt = rbytes(rng("tls-big", n), n + 1)
        want = ref(KEY, NONCE, pt, AAD)
        assert a.encrypt(NONCE, [pt[:n], pt[n:]], AAD) == want, (backend, n)
        out = bytearray(pt)  # in place: both pieces are views of out
        mv = memoryview(out)
        assert a.encrypt_into(out, NONCE, [mv[:n], mv[n:]], AAD) == want[-TAG:], (backend, n)
        assert bytes(out) == want[:-TAG], (backend, n, "in place")
    for nonce_len, aad_len, n in ((12, 17, 300), (13, 0, 300), (11, 5, 300), (12, 0, 255),
                                  (12, 16, 256)):
        pt = rbytes(rng("near", nonce_len, aad_len, n), n + 1)
        nonce, aad = b"\x07" * nonce_len, b"\x09" * aad_len
        got = a.encrypt(nonce, [pt[:n], pt[n:]], aad)
        assert got == ref(KEY, nonce, pt, aad), (backend, nonce_len, aad_len, n)
        got = a.encrypt(nonce, [pt[:n], pt[n:n + 1], b""], aad)
        assert got == ref(KEY, nonce, pt, aad), (backend, nonce_len, aad_len, n, "3 pieces")


@pytest.mark.parametrize(("kind", "threshold", "sizes"), [
    ("aligned", 100, [[48, 48, 3], [48, 48, 4], [48, 48, 5], [96, 3], [100], [101]]),
    ("unaligned", 200, [[7, 192], [7, 193], [7, 194], [100, 99], [50, 50, 100], [3, 198]]),
])
def test_copy_below_threshold(backend, kind, threshold, sizes):
    """copy_below=(100, 200): a text shorter than the threshold of its kind (aligned: every
    piece but the last a whole number of blocks) is copied into `out` and sealed there (the
    `seal` entry); at or above it, the pieces are gathered (`seal_gather`)."""
    for lens in sizes:
        total = sum(lens)
        aligned = all(n % 16 == 0 for n in lens[:-1])
        assert (kind == "aligned") == aligned, lens
        pt = rbytes(rng("copy", total, len(lens)), total)
        pieces, pos = [], 0
        for n in lens:
            pieces.append(pt[pos:pos + n])
            pos += n
        want = ref(KEY, NONCE, pt, AAD)
        a, spy = spied(backend)
        check(a, pieces, want, (100, 200), (backend, lens))
        path = "seal" if total < threshold else "seal_gather"
        assert spy.calls == [path, path], (backend, lens, spy.calls)
        spy.clear()
        check(a, pieces, want, False, (backend, lens))
        assert spy.calls == ["seal_gather", "seal_gather"], (backend, lens, spy.calls)


def test_copy_below_default_and_true(backend):
    """None and True use the backend's threshold (the shipped derived one if any); False never
    copies, even one byte."""
    a, spy = spied(backend)
    t_aligned, _ = a.copy_below
    for n in sorted({0, 1, max(t_aligned - 1, 0), t_aligned, t_aligned + 1}):
        pt = rbytes(rng("dflt", n), n)
        spy.clear()
        assert a.encrypt(NONCE, [pt], AAD) == ref(KEY, NONCE, pt, AAD)
        assert a.encrypt(NONCE, [pt], AAD, copy_below=True) == ref(KEY, NONCE, pt, AAD)
        assert spy.calls == ["seal" if n < t_aligned else "seal_gather"] * 2, (n, t_aligned)
        spy.clear()
        assert a.encrypt(NONCE, [pt], AAD, copy_below=False) == ref(KEY, NONCE, pt, AAD)
        assert spy.calls == ["seal_gather"]


def test_pieces_in_place_inside_out(backend):
    """Pieces that are exactly where their output goes (views of `out`) are in place, not
    overlap: all of them, or only some."""
    n = 16 * BY_NAME[backend].group + 21
    pt = rbytes(rng("inplace", n), n)
    want = ref(KEY, NONCE, pt, AAD)
    a = AesGcm(KEY, backend=backend)
    for cut in (0, 1, 16, 17, n - 1, n):
        for copy_below in (False, (10**6, 10**6)):
            out = bytearray(pt)
            mv = memoryview(out)
            tag = a.encrypt_into(out, NONCE, [mv[:cut], mv[cut:]], AAD, copy_below=copy_below)
            assert bytes(out) + tag == want, (cut, copy_below)
            out = bytearray(pt[:cut]) + bytearray(n - cut)
            mv = memoryview(out)
            tag = a.encrypt_into(out, NONCE, [mv[:cut], pt[cut:]], AAD, copy_below=copy_below)
            assert bytes(out) + tag == want, (cut, copy_below, "first piece in place")


@settings(max_examples=60)
@given(n=st.one_of(st.integers(0, 300), st.integers(0, 3000)),
       cuts=st.lists(st.integers(0, 3000), max_size=7), empties=st.lists(st.integers(0, 8),
                                                                           max_size=3),
       copy_below=st.one_of(st.just(False), st.just(None),
                            st.tuples(st.integers(0, 400), st.integers(0, 400))),
       nl=st.one_of(st.just(12), st.integers(1, 40)), seed=st.integers(0, 2**32))
def test_random_splits(backend, n, cuts, empties, copy_below, nl, seed):
    """Up to 8 pieces (empty ones included) in any arrangement equal the one-shot result."""
    if backend == "portable":
        n %= 1000
    r = rng(seed)
    pt, nonce, aad = rbytes(r, n), rbytes(r, nl), rbytes(r, seed % 40)
    bounds = sorted({c % (n + 1) for c in cuts} | {0, n})
    pieces = [pt[a:b] for a, b in zip(bounds, bounds[1:], strict=False)]
    for e in empties:
        pieces.insert(e % (len(pieces) + 1), b"")
    pieces = pieces[:8] if len(pieces) <= 8 else pieces[:7] + [b"".join(pieces[7:])]
    assert b"".join(pieces) == pt
    a = AesGcm(KEY[:16], backend=backend)
    want = ref(KEY[:16], nonce, pt, aad)
    assert a.encrypt(nonce, pieces, aad, copy_below=copy_below) == want, [len(p) for p in pieces]
    out = bytearray(n)
    tag = a.encrypt_into(out, nonce, [bytearray(p) for p in pieces], aad, copy_below=copy_below)
    assert bytes(out) + tag == want
    assert a.decrypt(nonce, want, aad) == pt
    assert len(want) == n + TAG
