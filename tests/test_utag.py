"""The L1D way predictor's model (`vgkernels.bench.utag`) and the placement sweep's outputs
chosen by it.  Nothing timed: which pages share a µtag is arithmetic on addresses."""

from __future__ import annotations

from vgkernels import abi
from vgkernels.bench import utag
from vgkernels.bench.targets import ALIGN_BASE, _va_buffers
from vgkernels.buffers import PAGE, Buf

BASE = 0x7F12_3450_0000


def test_the_page_offset_does_not_count():
    assert {utag.utag(BASE + o) for o in (0, 1, 63, 64, 2048, PAGE - 1)} == {utag.utag(BASE)}


def test_each_hash_bit_is_the_xor_of_its_two_address_bits():
    t0 = utag.utag(BASE)
    for k, (a, b) in enumerate(utag.HASH_BITS):
        assert utag.utag(BASE ^ (1 << a)) == t0 ^ (1 << k)
        assert utag.utag(BASE ^ (1 << b)) == t0 ^ (1 << k)
        assert utag.utag(BASE ^ (1 << a) ^ (1 << b)) == t0  # both flipped: the same µtag
    assert utag.utag(BASE ^ (1 << 28)) == t0  # above bit 27: not hashed


def test_every_mebibyte_holds_every_tag_once():
    """Bits 12-19 reach every hash bit once (bits 20-27 fixed), so 256 pages in a row have
    256 different µtags: a 1 MiB window holds every value."""
    assert len({utag.utag(BASE + k * PAGE) for k in range(256)}) == 256


def test_page_tags_and_contend():
    assert len(utag.page_tags(BASE + 100, 1)) == 1
    assert len(utag.page_tags(BASE + PAGE - 1, 2)) == 2  # crosses into the next page
    assert len(utag.page_tags(BASE, 3 * PAGE)) == 3
    other = BASE + (1 << 13)  # bit 13 flipped: a different µtag
    assert not utag.contend((BASE, PAGE), (other, PAGE))
    assert utag.contend((BASE, 2 * PAGE), (BASE + (1 << 12) + (1 << 27), PAGE))  # alias
    assert utag.contend((other, 8), (BASE, 4 * PAGE)) == utag.contend((BASE, 4 * PAGE),
                                                                       (other, 8))


def test_va_buffers_split_as_asked_and_labelled_right():
    ctx = Buf.alloc(abi.CTX_SIZE, page_offset=0)
    for n in (4096, 16384):
        region, outs = _va_buffers(n, ctx.addr, 16)
        hits = [a for a, h in outs if h]
        assert len(outs) == 16 and len(hits) == 8
        assert len({a for a, _ in outs}) == 16
        for a, h in outs:
            assert a % PAGE == ALIGN_BASE
            assert region.addr <= a and a + n <= region.end
            assert h == utag.contend((a, n), (ctx.addr, abi.CTX_SIZE))


def test_stream_buffers_are_placed_apart_from_hot_tags():
    """`cases.alloc_apart` keeps allocating while a page of the buffer has a µtag in
    HOT_TAGS (the key contexts' pages), so a case's streams do not evict its context."""
    from vgkernels.bench import cases

    saved = set(cases.HOT_TAGS)
    try:
        cases.HOT_TAGS.clear()
        cases.HOT_TAGS.update(range(200))  # most µtags: a first allocation rarely passes
        for _ in range(8):
            b = cases.alloc_apart(PAGE, page_offset=0)
            assert b.addr % PAGE == 0
            assert not utag.page_tags(b.addr, PAGE) & cases.HOT_TAGS
    finally:
        cases.HOT_TAGS.clear()
        cases.HOT_TAGS.update(saved)


def test_builder_registers_its_contexts_tags():
    from vgkernels.backends import usable
    from vgkernels.bench import cases
    from vgkernels.bench.cases import Builder, CaseSpec

    be = max(usable(), key=lambda b: b.rank).name
    ctx = Builder(drv=None).ctx(CaseSpec("seal", 16, be))
    assert utag.page_tags(ctx, abi.CTX_SIZE) <= cases.HOT_TAGS
