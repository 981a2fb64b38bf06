"""The counter fast path decides on the public copy of the counter (96-bit nonces: 2 + blocks
done), never on J0: messages long enough for the counter's low byte to carry (twice), through
every entry that hands the bulk functions a counter (one-shot, pieces at odd offsets, the
two-slice shape, the stream in chunks; the full and the split tail), with a 96-bit nonce (fast
path) and a 16-byte one (general path only), match the reference on every backend."""

from __future__ import annotations

import pytest
from helpers import rbytes, ref, rng

from vgkernels.api import AesGcm
from vgkernels.variant import Variant

KEY = bytes(range(16))
AAD = b"counter-aad"
N = 16 * 600 + 7  # the low byte carries at blocks 254 and 510
NONCES = [bytes(range(40, 52)), bytes(range(40, 56))]


@pytest.mark.parametrize("tail", ["full", "split"])
@pytest.mark.parametrize("nonce", NONCES, ids=["nonce96", "nonce128"])
def test_long_messages_cross_the_low_byte_carry(backend, nonce, tail):
    pt = rbytes(rng("ctr-public", len(nonce)), N)
    want = ref(KEY, nonce, pt, AAD)
    a = AesGcm(KEY, backend=backend, variant=Variant(tail=tail))
    assert a.encrypt(nonce, pt, AAD) == want
    assert a.decrypt(nonce, want, AAD) == pt
    for cuts in ([1, 4000], [16 * 255, 33], [16 * 254 + 5, 16 * 256], [N - 1]):
        pieces, at = [], 0
        for c in cuts:
            pieces.append(pt[at:at + c])
            at += c
        pieces.append(pt[at:])
        assert a.encrypt(nonce, pieces, AAD, copy_below=False) == want, cuts
    for size in (4097, 16 * 255 + 3, 1000):
        enc = a.encryptor(nonce, AAD)
        got = b"".join(enc.update(pt[i:i + size]) for i in range(0, N, size))
        assert got + enc.finalize() == want, size
        dec = a.decryptor(nonce, AAD)
        got = b"".join(dec.update(want[i:min(i + size, N)]) for i in range(0, N, size))
        dec.finalize_with_tag(want[N:])
        assert got == pt, size


def test_every_group_position_across_the_run_end(backend):
    """The stitched loops' counter fast path (`stitched._fast`, the first-round table) hands
    over to the counted path at the end of each run of 256 counters: the bulk call after a
    first piece of k blocks starts at counter 2 + k, so k over two lead groups puts the run's
    end at every lane of every vector of the group that crosses it and of the one after, in
    seal (one-shot from two pieces, and streamed) and open (streamed)."""
    from vgkernels.backends import get
    lead = get(backend).lead_group
    nonce = NONCES[0]
    a = AesGcm(KEY, backend=backend)
    pt = rbytes(rng("ctr-lanes", 1), 16 * (256 + 3 * lead) + 5)
    want = ref(KEY, nonce, pt, AAD)
    for k in range(2 * lead + 1):
        cut = 16 * k
        assert a.encrypt(nonce, [pt[:cut], pt[cut:]], AAD, copy_below=False) == want, k
        enc = a.encryptor(nonce, AAD)
        assert enc.update(pt[:cut]) + enc.update(pt[cut:]) + enc.finalize() == want, k
        dec = a.decryptor(nonce, AAD)
        got = dec.update(want[:cut]) + dec.update(want[cut:len(pt)])
        dec.finalize_with_tag(want[len(pt):])
        assert got == pt, k
