"""seal's loop forms that hash something other than the group just stored, from the output:
the lead loop hashing the group stored two iterations back (`Backend.enc_lag` 2: vaes_avx2, and
vaes_avx512's smaller groups under its lead of 32 when a backend row sets it), and the loop
hashing the previous group from registers (`Backend.enc_carry`: vaes_avx512, in its own
function from CARRY_MIN_GROUPS groups).

For each, in the default build, the split tail and the smallest group: every block count from
one below the hand-over through three more groups, every remainder, partial final blocks, into
outputs 0, 5 and 32 bytes past a 64-byte boundary through the C ABI (guard bytes either side) and
through the API (one piece, and the TLS record shape: payload then its type byte), against
`cryptography`; then opened back.  The plain loop's hand-overs stay covered by
test_kernels_blocks."""

from __future__ import annotations

import ctypes

import pytest
from helpers import KEY_SIZES, TAG, addr_of, bind, oracle, rbytes, rng

from vgkernels.api import AesGcm
from vgkernels.backends import BY_NAME
from vgkernels.kernels.bulk import carries, lead_from
from vgkernels.kernels.common import Params
from vgkernels.kernels.leftover import U
from vgkernels.kernels.stitched import CARRY_MIN_GROUPS
from vgkernels.variant import Variant

FORMS = [b for b in BY_NAME.values() if b.enc_lag == 2 or b.enc_carry]
# the default build, the split tail, and the smallest group (a lead group above it)
CASES = [(b.name, v) for b in FORMS
         for v in (Variant(), Variant(tail="split"), Variant(group=min(b.groups)))]


def block_counts(name: str, variant: Variant) -> list[int]:
    """From one block below the hand-over through three more groups of the loop."""
    be = BY_NAME[name]
    v = variant.resolved(be)
    if carries(Params(be, v, "")):  # the carried function, from a group
        g, start = v.group, CARRY_MIN_GROUPS * v.group
    else:  # the lead function (enc_lead), from lead_from blocks
        g = max(be.groups)
        start = lead_from(be)
    return list(range(start - 1, start + 3 * g + 2))


def test_some_backend_has_the_forms():
    assert any(b.enc_lag == 2 for b in FORMS) and any(b.enc_carry for b in FORMS), \
        "a loop form this module tests is gone from the backend table"


def _at(raw: bytearray, shift: int, n: int) -> memoryview:
    """n bytes of raw starting ``shift`` bytes past a 64-byte boundary."""
    off = -addr_of(raw) % 64 + shift
    return memoryview(raw)[off:off + n]


@pytest.mark.parametrize(("backend", "variant"), CASES, indirect=["backend"],
                         ids=[f"{n}-{v.tag() if v.group else 'default'}" for n, v in CASES])
def test_seal_every_block_count_through_the_loop_forms(backend, variant, kernel_sets):
    kernel_sets(backend, variant)
    seal_out = bind(backend, "seal_out", variant)
    for nb in block_counts(backend, variant):
        r = rng("forms", backend, nb)
        partial = (0, nb % 15 + 1)[nb % 2]
        key = rbytes(r, KEY_SIZES[nb % 3])
        nonce = rbytes(r, 12 if nb % 5 else 16)  # 16: no public counter, the general path
        aad = rbytes(r, (0, 13, 33)[nb % 3])
        pt = rbytes(r, 16 * nb + partial)
        n, want = len(pt), oracle(key, nonce, pt, aad)
        where = (f"{backend} {variant} blocks={nb} partial={partial} key={len(key)} "
                 f"nonce={len(nonce)}")
        a = AesGcm(key, backend=backend, variant=variant)
        assert a.encrypt(nonce, pt, aad) == want, where
        assert a.decrypt(nonce, want, aad) == pt, where
        raw = bytearray(n + 192)
        for shift in (0, 5, 32):
            buf = _at(raw, shift, n)
            buf[:] = pt
            assert a.encrypt_in_place(nonce, buf, aad) == want[-TAG:], (where, shift)
            assert bytes(buf) == want[:-TAG], (where, shift)
            if n > 1:  # the record shape: payload, then its type byte
                tag = a.encrypt_into(buf, nonce, [pt[:-1], pt[-1:]], aad, copy_below=False)
                assert bytes(buf) + tag == want, (where, shift, "record")
        # the C ABI into an output 0, 5 or 32 bytes past a line, guard bytes either side
        out = (ctypes.c_uint8 * (n + 256))()
        base = (ctypes.addressof(out) + 63) & ~63
        for shift in (64, 69, 96):
            ctypes.memset(out, 0xA5, n + 256)
            tag = ctypes.create_string_buffer(TAG)
            rc = seal_out(a.ctx, nonce, len(nonce), aad, len(aad), pt, base + shift, n, tag)
            assert rc == 0, (where, shift)
            got = ctypes.string_at(base + shift, n)
            assert got + tag.raw == want, (where, shift)
            around = ctypes.string_at(base, shift) + ctypes.string_at(base + shift + n, 64)
            assert around == bytes([0xA5]) * (shift + 64), (where, shift, "wrote outside")


@pytest.mark.parametrize("cpu", ["sapphirerapids", "znver4"])
def test_carried_loop_stores_nothing_to_the_stack(cpu):
    """The carried loop's only stores are the output's: a spill stored every iteration to a
    fixed stack slot 4K-aliased with a load at one window of the caller's stack offsets (seal
    1.16x on Sapphire Rapids), so the group's last vector is reloaded from the output
    (`stitched.CARRY_RELOADED`, one more with Karatsuba).  Checked in the machine code for an
    Intel and an AMD CPU (either host)."""
    import re

    from vgkernels import listing
    from vgkernels.asm import regions

    for be in (b for b in FORMS if b.enc_carry):
        v = Variant().resolved(be, cpu)
        prefix, text = listing.assembly(be, v, cpu)
        loop = regions.regions(text, prefix, be, v)["stitch"]
        ops = [ins.split(None, 1) for ins in loop.instructions]
        stores = [" ".join(op) for op in ops if len(op) == 2
                  and re.search(r"\(%r[sb]p\)$", op[1].split(",")[-1].strip())]
        assert not stores, f"{be.name} on {cpu}: stack stores in the carried loop: {stores}"
        assert sum(1 for op in ops if op[0].startswith("vmovdqu")
                   and re.search(r"\(%r\w+,%r\w+\)$", op[1])) >= v.group // be.width


@pytest.mark.parametrize("backend", [b.name for b in FORMS if b.enc_carry], indirect=True)
def test_every_end_sealed_beside_the_carried_loop(backend):
    """The carried function from two groups seals its masked end beside the loop and hashes it
    from the output (`Leftover.seal_end`); below two groups a function without the loop seals
    it last.  Every end of 0..U vectors' bytes, plus 17, after two groups, and the same after one
    group, in place and out of place, one piece and the record shape (the extra byte ends the
    text), against `cryptography`."""
    be = BY_NAME[backend]
    g = Variant().resolved(be).group
    span = 16 * U * be.width  # the end: fewer than U vectors (and a partial block)
    r = rng("sealed-end", backend)
    key, nonce, aad = rbytes(r, 16), rbytes(r, 12), rbytes(r, 13)
    a = AesGcm(key, backend=backend)
    for groups in (2, 1):
        for n in range(16 * g * groups, 16 * g * groups + span + 18):
            pt = rbytes(r, n)
            want = oracle(key, nonce, pt, aad)
            where = (backend, groups, n)
            assert a.encrypt(nonce, pt, aad) == want, where
            buf = bytearray(pt)
            assert a.encrypt_in_place(nonce, buf, aad) == want[-TAG:], where
            assert bytes(buf) == want[:-TAG], where
            buf[:] = pt  # the record shape in place: both pieces views of the output
            mv = memoryview(buf)
            tag = a.encrypt_into(buf, nonce, [mv[:-1], mv[-1:]], aad, copy_below=False)
            assert bytes(buf) + tag == want, where + ("record",)


@pytest.mark.parametrize("cpu", ["znver3", "znver5", "x86-64-v3"])
def test_reloaded_powers_are_memory_operands(cpu):
    """With `Backend.reloaded_powers`, the named functions' stitched loops take every key
    power and half-sum as a memory operand of the multiply that uses it (a load per use,
    folded): no register holds a power across its two multiplies, none is spilled.  Per
    vector of a group that is the low, middle and high multiply; only the reduction's two
    multiplies by its constant take registers.  The other functions keep their powers in
    registers.  Scheduled for three CPUs."""
    import re

    from vgkernels import listing
    from vgkernels.asm import cfg, regions

    rows = [b for b in BY_NAME.values() if b.reloaded_powers]
    assert {"seal", "record"} <= set().union(*(b.reloaded_powers for b in rows)), \
        "no backend row reloads the powers of both kinds of function"
    for be in rows:
        v = Variant().resolved(be, cpu)
        prefix, text = listing.assembly(be, v, cpu)
        found = regions.regions(text, prefix, be, v)
        f = cfg.functions(text)["vg.bulk.enc1.10"]
        hot = [[i for b in cfg.hot_path(f, lp) for i in f.blocks[b].instructions]
               for lp in cfg.loops(f)]
        loops = {"seal": [found["stitch"].instructions,
                          *([found["lead"].instructions] if "lead" in found else [])],
                 "record": [max(hot, key=lambda body: sum("pclmul" in i for i in body))]}
        for kind, bodies in loops.items():
            for body in bodies:
                muls = [i for i in body if i.split()[0] == "vpclmulqdq"]
                from_memory = [i for i in muls if re.search(r"\$\w+, *-?\w*\(%", i)]
                vectors = (len(muls) - 2) // 3
                assert len(muls) == 3 * vectors + 2 and vectors >= 4, (be.name, kind, muls)
                if kind in be.reloaded_powers:
                    assert len(from_memory) == 3 * vectors, (be.name, cpu, kind, muls)
                else:  # the powers, each used twice, in registers
                    assert len(from_memory) < 3 * vectors, (be.name, cpu, kind, muls)
