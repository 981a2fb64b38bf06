"""The bulk functions: the stitched loop (`stitched`) then the leftover chunk (`leftover`), one
generator for every vector width, group size and tail strategy, in four modes (`modes`).

``vg.bulk.<mode>.<nr>(ctx, io, in, out, nbytes, has_len)`` processes ``nbytes`` (whole blocks,
then at most one partial block) starting from the GHASH state and counter in ``io`` and, when
``has_len``, ends with the length block in ``io``; it leaves the reduced GHASH value and the
next counter in ``io``.  io = {Y: 16 bytes, reflected; ctr: 16 bytes, LE form; len block}.

The modes with a counter take one more argument, ``pub_ctr``: the counter's low 32 bits at entry
when they are public (a 96-bit nonce: J0 = nonce || 1, so they count blocks from 2), else -1.
It alone decides the counter fast path (see `stitched.advance`): for other nonces J0 =
GHASH_H(IV) depends on H, and a branch on its low byte would leak bits of J0 (linear in H for a
16-byte IV); they always take the branch-free general path instead.

Tail strategies (`Variant.tail`, the only meaning of "tail" here): ``full``, the stitched loop
takes every group; ``split``, it stops at a multiple of 2G and the rest goes through separate
ctr and hash calls, then the leftover's partial block and length block.
"""

from __future__ import annotations

from llvmlite import ir

from .. import abi
from ..ir import aes
from ..ir import ctr as ctrs
from ..ir.core import i1, i64, ptr, void
from .common import NR, Fn, Params
from .leftover import Leftover
from .modes import CTR, DEC, ENC, HASH, MODES, Mode


def _c(x: int) -> ir.Constant:
    return ir.Constant(i64, x)


LEAD_MIN_GROUPS = 12


class BulkFn:
    """One bulk function under construction: its arguments and what every step reads (round
    keys, the loop's broadcast powers), emitted once at the top of the function."""

    def __init__(self, module: ir.Module, params: Params, mode: Mode, nr: int,
                 extra: bool = False):
        """``extra``: the two-slice form: one more byte, passed by value, follows the nbytes of
        ``in``; the final (masked or partial) block takes it, so the last block of a TLS record
        (payload, then the content-type byte) needs no separate call and no extra reduction."""
        self.p, self.mode, self.nr, self.extra = params, mode, nr, extra
        w, g = params.w, params.g
        # The leftover hashes at most 2G - 1 whole blocks + the partial + the length block, each
        # at its own power: the table must reach H^(2G+1); a vector of W powers from H^1 runs
        # W - 1 blocks into the zero padding.
        assert 2 * g + 1 <= abi.CTX_NPOW, f"group {g}: CTX_NPOW {abi.CTX_NPOW} < 2G + 1"
        assert w - 1 <= abi.CTX_POWER_PAD, f"width {w}: CTX_POWER_PAD < W - 1"
        self.f = Fn(module, params, mode.symbol(nr, extra), void, mode.arg_types(extra))
        self.f.fn.attributes.add("noinline")
        self.em, self.b = self.f.em, self.f.b
        self.ctx, self.io, self.inp, self.out, self.nbytes, self.has_len = self.f.args[:6]
        self.pub_ctr = self.f.args[6] if mode.keystream else None
        self.extra_byte = self.f.args[-1] if extra else None
        # rounds of the next group begun early (enc's skewed loop); at most nr - 1
        self.skew = min(params.variant.skew or 0, nr - 1)
        self.rk: dict[int, list[ir.Value]] = {}
        if mode.keystream:
            self.rk[w] = self.f.round_keys(self.ctx, nr, w)
            if w > 1:
                self.rk[1] = self.f.round_keys(self.ctx, nr, 1)
        # dec's first loop takes groups of the backend's largest group (see
        # stitched.counting_region): on vaes_avx2 16 blocks (8 ymm AES chains) against the
        # default 8, measured 15% faster at 16-64 KiB; seal keeps G (its leftover, up to 2G - 1
        # blocks plus the pending group, made 256 B-2 KiB slower with 16).
        self.lead_group = max(params.backend.groups) if mode in (DEC, ENC) else g
        self.lead_min = LEAD_MIN_GROUPS * self.lead_group  # blocks before enc's lead loop
        assert 2 * self.lead_group <= abi.CTX_NPOW
        # H^e in every lane (and its Karatsuba half-sum) for e = W, 2W, .., the lead group:
        # vector k of a group of g blocks takes H^(g-kW).  Hoisted here: loading the lead
        # loop's powers in the loop instead made it 4% slower.
        self.bcast: dict[int, tuple[ir.Value, ir.Value | None]] = {}
        if mode.hashed is not None:
            for e in range(w, max(g, self.lead_group) + 1, w):
                self.bcast[e] = self._bcast_load(e)

    def _bcast_load(self, e: int) -> tuple[ir.Value, ir.Value | None]:
        h = self.em.broadcast(self.f.power(self.ctx, e, 1), self.p.w)
        return h, (self.f.gh.fold_halves(h) if self.f.gh.karatsuba else None)

    def bcast_power(self, e: int) -> tuple[ir.Value, ir.Value | None]:
        """H^e in every lane (and its half-sum), emitted once at the top of the function."""
        return self.bcast[e]

    def keystream(self, ctr: ir.Value, w: int, nvec: int) -> list[ir.Value]:
        """counter_blocks then aes_rounds, all at once (no interleaving)."""
        blocks = ctrs.counter_blocks(self.em, ctr, w, nvec)
        return aes.aes_encrypt(self.em, self.f.prims, blocks, self.rk[w])

    def leftover(self, i, e, p, has_len, s, ctr, pending) -> list[ir.Value]:
        return list(Leftover(self, i, e, p, has_len, s, ctr, pending).run())

    def build(self) -> ir.Function:
        em, b, w, g, mode = self.em, self.b, self.p.w, self.p.g, self.mode
        y = em.load(self.io, 0)
        ctr = em.load(self.io, 16)
        nb = b.lshr(self.nbytes, _c(4))
        p = b.and_(self.nbytes, _c(15))
        s0 = em.widen(y, w)
        split = self.p.variant.tail == "split" and not self.extra
        # Where the stitched region ends: every block (full) or a multiple of 2G (split).
        stitch_end = b.mul(b.udiv(nb, _c(2 * g)), _c(2 * g)) if split else nb
        split = split and mode.stitched
        enter = b.icmp_unsigned(">=", nb, _c(mode.min_blocks(g, self.p.variant.stitch_min)))
        if split:
            enter = b.and_(enter, b.icmp_unsigned(">=", stitch_end, _c(2 * g)))
        end = stitch_end if mode.stitched else nb
        i, s, c = em.if_else_values(enter, lambda: mode.region(self, end, s0, ctr),
                                    lambda: [_c(0), s0, ctr], "region")
        pending = enter if mode.stitched else None
        if split:
            y, c = em.if_else_values(
                enter, lambda: self.split_rest(i, stitch_end, nb, p, s, c, pending),
                lambda: self.leftover(i, nb, p, self.has_len, s, c, pending), "split")
        else:
            y, c = self.leftover(i, nb, p, self.has_len, s, c, pending)
        if mode.hashed is not None:
            em.store(y, self.io, 0)
        if mode.keystream:
            em.store(c, self.io, 16)
        b.ret_void()
        return self.f.fn

    def split_rest(self, i, stitch_end, nb, p, s, c, pending) -> list[ir.Value]:
        """The split tail strategy: the leftover up to stitch_end (no partial, no length), then
        blocks [stitch_end, nb) through separate ctr and hash calls, then the partial block and
        the length block."""
        em, b, w = self.em, self.b, self.p.w
        false = ir.Constant(i1, 0)
        y1, c1 = self.leftover(i, stitch_end, _c(0), false, s, c, pending)
        em.store(y1, self.io, 0)
        em.store(c1, self.io, 16)
        mid = b.sub(nb, stitch_end)
        off = b.shl(stitch_end, _c(4))
        src, dst = em.gep(self.inp, off), em.gep(self.out, off)
        nbytes = b.shl(mid, _c(4))
        calls = [(CTR, src, dst), (HASH, dst, dst)]
        if self.mode.hashes_input:  # hash the ciphertext before in-place output overwrites it
            calls = [(HASH, src, dst), (CTR, src, dst)]
        # the public copy of the counter at block stitch_end (or still none)
        pub = b.select(b.icmp_signed(">=", self.pub_ctr, _c(0)),
                       b.add(self.pub_ctr, stitch_end), _c(-1))
        for m, a, o in calls:
            fn = em.module.globals[m.symbol(self.nr, False)]
            b.call(fn, [self.ctx, self.io, a, o, nbytes, false] + ([pub] if m.keystream else []))
        y2 = em.widen(em.load(self.io, 0), w)
        c2 = em.load(self.io, 16)
        return self.leftover(nb, nb, p, self.has_len, y2, c2, None)


def build_all(module: ir.Module, params: Params) -> None:
    """Every bulk function plus the nr-dispatching wrappers vg.bulk.<mode>."""
    BulkFn(module, params, HASH, 0).build()
    for nr in NR:
        for mode in (CTR, ENC, DEC):
            BulkFn(module, params, mode, nr).build()
    if params.backend.two_slice:
        for nr in NR:
            BulkFn(module, params, ENC, nr, extra=True).build()
    for mode in (CTR, ENC, DEC):
        f = Fn(module, params, f"vg.bulk.{mode.name}", void, [ptr, ptr, ptr, ptr, i64, i1, i64])
        args = list(f.args)

        def arm(nr, f=f, mode=mode, args=args):
            f.b.call(module.globals[mode.symbol(nr, False)], args)
        f.dispatch_nr(args[0], arm)
        f.b.ret_void()


__all__ = ["MODES", "BulkFn", "build_all"]
