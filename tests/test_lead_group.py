"""seal's and open's bulk functions run a loop over the backend's largest group first when that
is larger than the default group (vaes_avx2: 16 blocks, then 8), then the default group's loop
and the leftover: sizes at and around every hand-over (seal: from `lead_from` blocks),
in place and out of place, with a counter whose low byte carries inside the first loop, match
the reference on every backend."""

from __future__ import annotations

import pytest
from helpers import rbytes, ref, rng

from vgkernels.api import AesGcm, InvalidTag
from vgkernels.backends import BACKENDS
from vgkernels.kernels.bulk import lead_from

KEY = bytes(range(32))
AAD = b"lead-group"
NONCE = bytes(range(60, 72))  # 96-bit: the counter starts at 2, its low byte carries at 254


def _sizes(backend: str) -> list[int]:
    be = next(b for b in BACKENDS if b.name == backend)
    lead, g = max(be.groups), be.group
    m = lead_from(be)
    blocks = {2 * g, 2 * lead - 1, 2 * lead, 2 * lead + g - 1, 2 * lead + g, 3 * lead + g + 5,
              m - 1, m, m + g - 1, m + g, m + lead + g + 3,
              260}  # 260: a carry of the low byte inside the lead loop
    return sorted(16 * n + p for n in blocks for p in (0, 7))


def test_seal_and_open_around_the_lead_group(backend):
    a = AesGcm(KEY, backend=backend)
    for n in _sizes(backend):
        pt = rbytes(rng("lead", backend, n), n)
        ct = ref(KEY, NONCE, pt, AAD)
        assert a.encrypt(NONCE, pt, AAD) == ct, n
        buf = bytearray(pt)
        assert a.encrypt_in_place(NONCE, buf, AAD) == ct[-16:], n
        assert bytes(buf) == ct[:-16], n
        assert a.decrypt(NONCE, ct, AAD) == pt, n
        buf = bytearray(ct[:-16])
        a.decrypt_in_place(NONCE, buf, AAD, ct[-16:])
        assert bytes(buf) == pt, n
        with pytest.raises(InvalidTag):  # one ciphertext bit flipped in the first group
            a.decrypt(NONCE, bytes([ct[0] ^ 1]) + ct[1:], AAD)
