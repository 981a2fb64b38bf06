"""AMD's L1 data-cache way predictor: which pages contend for a cache set.

Zen cores choose the way of an L1D access by its µtag, an 8-bit hash of linear-address bits
12-27.  Two lines in one set (the same page offset, bits 6-11) whose pages share a µtag cannot
both stay in L1D: an access to one evicts the other.  Lipp et al. reverse-engineered the hash on
Zen and Zen 2 ("Take A Way", AsiaCCS 2020); on the Zen 4 of issue 12 it predicted which output
buffers made seal_out slower.  When an output page shares a µtag with a page of the key context,
the output's stores evict the context lines every iteration reads (round keys, the first-round
table), and seal_out 16 KiB measured 4-8% slower on vaes_avx2 (docs/design-notes.md).  Which
buffers those are depends on where malloc or mmap put them, not on their page offset, so the
placement sweep keeps its output pages fixed and times the address effect separately.
"""

from __future__ import annotations

from ..buffers import PAGE

# µtag bit k = address bit a XOR address bit b
HASH_BITS = ((12, 27), (13, 26), (14, 25), (15, 20), (16, 21), (17, 22), (18, 23), (19, 24))


def utag(addr: int) -> int:
    """The 8-bit µtag of the page holding ``addr``."""
    return sum((((addr >> a) ^ (addr >> b)) & 1) << k for k, (a, b) in enumerate(HASH_BITS))


def page_tags(addr: int, n: int) -> set[int]:
    """The µtags of every page that the n bytes at ``addr`` touch."""
    first = addr & ~(PAGE - 1)
    return {utag(p) for p in range(first, addr + max(n, 1), PAGE)}


def contend(a: tuple[int, int], b: tuple[int, int]) -> bool:
    """Whether some page of buffer a, given as (address, length), shares a µtag with some
    page of buffer b.  Their lines at equal page offsets then evict each other from L1D."""
    return bool(page_tags(*a) & page_tags(*b))
