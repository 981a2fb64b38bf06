"""The leftover chunk: what the stitched loop did not take, as named steps over one GHASH sum.

Blocks [i, e), then p partial bytes, then the length block (if has_len), one reduction.  Every
hashed block carries its own power: with r blocks to hash in all, the q-th takes H^(r-q) (a
vector of W blocks takes the W descending powers H^(r-q) .. H^(r-q-W+1), one load from the
table, see `stitched` for why the first vector's lanes also repair the loop's streams).  So the
steps can run in any order and the products simply add up, unreduced, in a `Cursor`'s sums:

  pending group    enc: hash the G blocks the loop stored last; dec: one more stitched group
  masked end       (AVX-512) fewer than u vectors + the partial block + the extra byte as one
                   straight-line piece of m byte-masked vectors, emitted before the loop; in
                   enc its keystream is emitted before the pending group (`end_keystream`),
                   or, in the carried function from two groups, the end is sealed beside the
                   loop and read back (`seal_end`); in dec, and in that read-back, an end of
                   at most 16 bytes is one xmm block (`one_block`)
  vectors          u vectors per iteration, then (without masks) the m < u vectors left: in
                   enc on the AVX backends and in dec on two lanes one straight-line piece
                   picked by m (`rest_vectors`; after a skewed loop it finishes the group
                   the loop began, `rest_keystream`), else a loop of one vector per iteration
  blocks           (without masks) one block per iteration; on two lanes at most one, the odd
                   block, whose keystream is computed with the partial block's as one ymm
                   chain, beside the rest vectors' chains (`end_pair`)
  partial block    (without masks) the last n < 16 bytes
  length block     [len(A)]_64 || [len(C)]_64
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from llvmlite import ir

from ..ir import aes, partial
from ..ir import ctr as ctrs
from ..ir.core import i1, i32, i64, i128, zero
from ..ir.ghash import Parts

if TYPE_CHECKING:
    from ..ir.core import Emitter
    from .bulk import BulkFn


U = 4  # vectors per iteration of the leftover's loop (`BulkFn.leftover_vectors`)


def _c(x: int) -> ir.Constant:
    return ir.Constant(i64, x)


def by_count(em: Emitter, n: ir.Value, first: int, last: int,
             arm: Callable[[int], Callable[[], list]], name: str) -> Callable[[], list]:
    """A branch running ``arm(m)`` for the m in first..last that n equals (``arm(last)`` for
    any other n): straight-line pieces picked by a count of vectors."""
    def pick(m: int) -> Callable[[], list]:
        if m == last:
            return arm(m)
        return lambda: em.if_else_values(em.b.icmp_unsigned("==", n, _c(m)), arm(m),
                                         pick(m + 1), f"{name}{m}")
    return pick(first)


def _masked_text(fn: BulkFn, p: ir.Value, n: ir.Value, width: int) -> tuple[ir.Value, ir.Value]:
    """The end's last vector: n bytes at p, then the record form's extra byte; (data, mask)."""
    d, mask = partial.masked_load(fn.em, p, n, width)
    if fn.extra:
        d, mask = partial.insert_byte(fn.em, d, mask, n, fn.extra_byte, width)
    return d, mask


def seal_end(fn: BulkFn, ctr: ir.Value) -> None:
    """enc's masked end sealed beside the carried loop (`BulkFn.end_first`: emitted after
    group 0, so its AES chains fill gaps in the loop's pipes).  After the loop, its chains
    came after everything else: a flat 7-9 ns for having an end at all (Zen 4).  The
    ciphertext waits in the output, and `masked_end` hashes it from there, a loop iteration
    or more later (a masked store does not forward to a load: read back with no loop
    between, as in one group, seal measured 1-4% slower than sealing at the end).  The
    loop takes every whole group, so the end starts at the last multiple of U vectors,
    known here.  In place is safe: the end's bytes are read before they are written and
    nothing else reads them; an output partly overlapping the input is not allowed."""
    em, b, w = fn.em, fn.b, fn.p.w
    u = fn.leftover_vectors
    assert fn.p.g % (u * w) == 0, "the loop must stop on a multiple of the end's span"
    jt = b.and_(b.lshr(fn.nbytes, _c(4)), _c(-u * w))
    nrem_in = b.sub(fn.nbytes, b.shl(jt, _c(4)))
    nrem = b.add(nrem_in, _c(1)) if fn.extra else nrem_in  # the extra byte ends the text
    vb = 16 * w
    nvec = b.udiv(b.add(nrem, _c(vb - 1)), _c(vb))
    ctr_piece = ctrs.add(em, ctr, b.trunc(jt, i32))
    src = em.gep(fn.inp, b.shl(jt, _c(4)))
    dst = em.gep(fn.out, b.shl(jt, _c(4)))

    def last(ks: ir.Value, at: int, width: int) -> None:
        """The end's last vector (of `width` blocks, `at` bytes in), masked."""
        d, mask = _masked_text(fn, em.gep(src, at), b.sub(nrem_in, _c(at)), width)
        partial.masked_store(em, em.gep(dst, at), b.xor(d, ks), mask, width)

    def piece(m: int):
        def go():
            ks = fn.keystream(ctr_piece, w, m)
            for t in range(m - 1):
                em.store(b.xor(em.load(src, t * vb, w), ks[t]), dst, t * vb)
            last(ks[-1], (m - 1) * vb, w)
            return []
        return go

    def one():  # at most a block: one xmm chain, a quarter of a zmm one's AES work
        last(fn.keystream(ctr_piece, 1, 1)[0], 0, 1)
        return []

    def some():
        return em.if_else_values(b.icmp_unsigned("<=", nrem, _c(16)), one,
                                 by_count(em, nvec, 1, u, piece, "sealed"), "one")
    em.if_else_values(b.icmp_unsigned("==", nvec, _c(0)), list, some, "sealed")


@dataclass
class Cursor:
    """Where the leftover stands; a loop or a branch carries it whole."""

    j: ir.Value  # the next block
    q: ir.Value  # blocks hashed so far: the next hashed block takes H^(r - q)
    ctr: ir.Value  # the next counter
    sums: Parts  # the unreduced sum of products, W lanes (or one)
    x: ir.Value  # the GHASH state, still to be XORed into the next hashed block (then zero)


class Leftover:
    def __init__(self, fn: BulkFn, i: ir.Value, e: ir.Value, p: ir.Value, has_len: ir.Value,
                 s: ir.Value, ctr: ir.Value, pending: ir.Value | None):
        """``pending``: the stitched loop ran (enc: its last group is stored, not hashed yet;
        dec: its last group is left to `last_stitched_group`)."""
        self.fn, self.em, self.b = fn, fn.em, fn.b
        b, g = self.b, fn.p.g
        self.e, self.p, self.has_len, self.s = e, p, has_len, s
        self.has_p = b.icmp_unsigned("!=", p, _c(0))
        if fn.extra:
            self.has_p = ir.Constant(i1, 1)  # the extra byte always ends the text
        # enc's pending group is hashed first, so it counts in r
        hashed_first = pending if fn.mode.hashes_output else None
        npend = b.select(hashed_first, _c(g), _c(0)) if hashed_first is not None else _c(0)
        # r: blocks to hash in all, the power of the first one
        self.r = b.add(b.add(npend, b.sub(e, i)),
                       b.add(b.zext(self.has_p, i64), b.zext(has_len, i64)))
        self.cur = Cursor(i, npend, ctr, fn.f.gh.zero_parts(fn.p.w), s)
        self.pending = pending
        self.ks: list[ir.Value] | None = None
        self.head_ks: list[ir.Value] | None = None
        u = fn.leftover_vectors
        self.masked = fn.p.backend.masked and fn.p.w > 1 and u > 1
        if self.masked and fn.mode.keystream and fn.mode.hashes_output and not fn.extra:
            # the masked end's keystream BEFORE enc's pending group hash: its AES chains then
            # start at once instead of queueing behind the group's multiplies
            self.ks = None if fn.end_first else self.end_keystream(self.cur, u)
        if self.masked and fn.mode.keystream and fn.mode.hashes_output and pending is not None:
            self.head_ks = self.head_keystream(self.cur, u, pending)
        fn.mode.pending_first(self, pending)

    def power(self, q: ir.Value, width: int) -> ir.Value:
        """H^(r-q) .. H^(r-q-width+1): the powers of the next `width` hashed blocks."""
        return self.fn.f.power(self.fn.ctx, self.b.sub(self.r, q), width)

    # -- pending group ---------------------------------------------------------------------
    def hash_stored_group(self, pending: ir.Value) -> None:
        """enc: GHASH of the G blocks before i, stored by the loop's last iteration."""
        fn, em, b, w, g = self.fn, self.em, self.b, self.fn.p.w, self.fn.p.g
        from .stitched import GroupHash, held_then_loaded
        c = self.cur

        def hashed():
            base = em.gep(fn.out, b.shl(b.sub(c.j, _c(g)), _c(4)))
            held = fn.pending_vectors  # the carried loop's: not reloaded (`_enc_carried`)
            gh = GroupHash(fn, held_then_loaded(fn, held, base), self.s,
                           lambda k: (self.power(_c(k * w), w),))
            for _ in gh.steps():
                pass
            return [gh.sum, zero(w)]
        c.sums, c.x = em.if_else_values(pending, hashed, lambda: [c.sums, self.s], "pend")

    def last_stitched_group(self, pending: ir.Value) -> None:
        """dec: the loop's last group, AES interleaved with GHASH at the descending powers."""
        fn, em, b, w, g, v = self.fn, self.em, self.b, self.fn.p.w, self.fn.p.g, self.fn.p.v
        from .stitched import GroupHash, interleave
        c = self.cur

        def stitched():
            off = b.shl(c.j, _c(4))
            data = [em.load(fn.inp, b.add(off, _c(16 * w * k)), w) for k in range(v)]
            rounds = aes.aes_rounds(em, fn.f.prims, ctrs.counter_blocks(em, c.ctr, w, v),
                                    fn.rk[w])
            gh = GroupHash(fn, lambda k: data[k], self.s, lambda k: (self.power(_c(k * w), w),))
            ks, _ = interleave(rounds, gh.steps())
            for k in range(v):
                em.store(b.xor(data[k], ks[k]), fn.out, b.add(off, _c(16 * w * k)))
            return [gh.sum, zero(w), ctrs.add(em, c.ctr, g), b.add(c.j, _c(g)), _c(g)]
        c.sums, c.x, c.ctr, c.j, c.q = em.if_else_values(
            pending, stitched, lambda: [c.sums, self.s, c.ctr, c.j, _c(0)], "last")

    # -- whole vectors and blocks ----------------------------------------------------------
    def vectors(self, c: Cursor, n: int, ks: list[ir.Value] | None = None) -> None:
        """n whole vectors at once: their AES rounds interleave (independent chains in
        flight), then each is stored and hashed in order (``ks``: their keystream, computed
        before)."""
        fn, em, b, w = self.fn, self.em, self.b, self.fn.p.w
        mode, gh = fn.mode, fn.f.gh
        offs = [b.shl(b.add(c.j, _c(k * w)), _c(4)) for k in range(n)]
        data = [em.load(fn.inp, o, w) for o in offs]
        outs = data
        if mode.keystream:
            ks = fn.keystream(c.ctr, w, n) if ks is None else ks
            outs = [b.xor(d, k) for d, k in zip(data, ks, strict=True)]
            for o, x in zip(offs, outs, strict=True):
                em.store(x, fn.out, o)
            c.ctr = ctrs.add(em, c.ctr, n * w)
        if mode.hashed is not None:
            for k in range(n):
                h = em.bswap_lanes(mode.hashed_value(data[k], outs[k]))
                if k == 0:
                    h = em.xor(h, c.x)
                c.sums = gh.accumulate(c.sums, h, self.power(b.add(c.q, _c(k * w)), w))
            c.x = zero(w)
        c.j, c.q = b.add(c.j, _c(n * w)), b.add(c.q, _c(n * w))

    def one_vector(self, c: Cursor, width: int, load: Callable[[ir.Value], ir.Value],
                   store: Callable[[ir.Value, ir.Value], None],
                   mask: ir.Value | None = None, ks: ir.Value | None = None) -> None:
        """One vector of `width` blocks (a block, or the partial block when ``mask`` covers
        its bytes): keystream (``ks``: computed before), xor, store, ghash_accumulate."""
        fn, em, b, mode = self.fn, self.em, self.b, self.fn.mode
        off = b.shl(c.j, _c(4))
        d = load(off)
        out = d
        if mode.keystream:
            if ks is None:
                (ks,) = fn.keystream(c.ctr, width, 1)
            out = b.xor(d, ks)
            store(off, out)
            c.ctr = ctrs.add(em, c.ctr, width)
        if mode.hashed is not None:
            src = mode.hashed_value(d, out)
            if mask is not None:
                src = b.and_(src, mask)
            h = em.xor(em.bswap_lanes(src), c.x)
            c.sums = fn.f.gh.accumulate(c.sums, h, self.power(c.q, width))
            c.x = zero(width)
        c.j, c.q = b.add(c.j, _c(width)), b.add(c.q, _c(width))

    def loop_vectors(self, name: str, c: Cursor, n: int) -> Cursor:
        """While n vectors remain before e: `vectors` (n > 1) or `one_vector`."""
        em, b, w = self.em, self.b, self.fn.p.w
        with em.loop(name, lambda v: b.icmp_unsigned("<=", b.add(v.c.j, _c(n * w)), self.e),
                     c=c) as v:
            if n > 1:
                self.vectors(v.c, n)
            else:
                self.one_vector(v.c, w, lambda off: em.load(self.fn.inp, off, w),
                                lambda off, x: em.store(x, self.fn.out, off))
        return v.c

    def rest_vectors(self, c: Cursor, u: int, with_end: bool
                     ) -> tuple[Cursor, ir.Value | None]:
        """The m < u whole vectors the u-vector loop leaves, as one straight-line piece
        (`vectors`: the m AES chains in flight at once) picked by m, instead of a loop of one
        vector per iteration.  ``with_end``: the piece also computes, as chain m + 1, the end
        pair's keystream (`end_pair`) if an odd or a partial block follows, and returns it
        (else zero): its AES chain then runs beside the rest's instead of after them."""
        em, b, w = self.em, self.b, self.fn.p.w
        nv = b.lshr(b.sub(self.e, c.j), _c(w.bit_length() - 1))
        need = self.end_keystream_needed(c) if with_end else None

        def some(m: int):
            def go():
                h = Cursor(c.j, c.q, c.ctr, c.sums, c.x)
                if need is None:
                    if m:
                        self.vectors(h, m, self.rest_keystream(c, m, f"{m}"))
                    return [h]
                ks = em.if_else_values(need, lambda: self.rest_keystream(c, m + 1, f"{m}e"),
                                       lambda: [*self.rest_keystream(c, m, f"{m}"), zero(w)],
                                       f"endks{m}")
                if m:
                    self.vectors(h, m, ks[:m])
                return [h, ks[m]]
            return go

        out = em.if_else_values(b.icmp_unsigned("==", nv, _c(0)), some(0),
                                by_count(em, nv, 1, u - 1, some, "rest"), "rest")
        return out[0], (out[1] if with_end else None)

    def rest_keystream(self, c: Cursor, n: int, name: str) -> list[ir.Value]:
        """The keystream of the rest's first n vectors.  After a skewed stitched loop, the
        group its last iteration began (`BulkFn.begun`), finished: its counters are these
        when a group is at most u vectors (the u-vector loop then never runs after the
        stitched loop).  Else from the counter."""
        fn, em, w = self.fn, self.em, self.fn.p.w
        if n == 0:
            return []

        def from_counter() -> list[ir.Value]:
            return fn.keystream(c.ctr, w, n)
        if not fn.begun or self.pending is None or fn.p.v > U:
            return from_counter()

        def finish() -> list[ir.Value]:
            *_, out = aes.aes_rounds_from(em, fn.f.prims, fn.begun[:n], fn.fresh_round_keys(w),
                                          fn.skew)
            return out
        return em.if_else_values(self.pending, finish, from_counter, f"fin{name}")

    def end_keystream_needed(self, c: Cursor) -> ir.Value:
        """Two lanes, after the whole vectors: an odd block or a partial block."""
        b = self.b
        odd = b.icmp_unsigned("!=", b.and_(b.sub(self.e, c.j), _c(1)), _c(0))
        return b.or_(odd, self.has_p)

    def head_keystream(self, c: Cursor, u: int, pending: ir.Value) -> list[ir.Value]:
        """The keystream of the u-vector loop's first iteration when enc's pending group
        precedes it (else zero), emitted before that group's hash: like the masked end's, its
        AES chains then run beside the group's multiplies instead of after them."""
        fn, em, b, w = self.fn, self.em, self.b, self.fn.p.w
        self.head = b.and_(pending, self.has_head(c, u))
        return em.if_else_values(self.head, lambda: fn.keystream(c.ctr, w, u),
                                 lambda: [zero(w)] * u, "hks")

    def has_head(self, c: Cursor, u: int) -> ir.Value:
        return self.b.icmp_unsigned("<=", self.b.add(c.j, _c(u * self.fn.p.w)), self.e)

    def head_vectors(self, c: Cursor, u: int, ks: list[ir.Value]) -> Cursor:
        """The u-vector loop's first iteration, peeled, on the keystream computed before."""
        def go():
            h = Cursor(c.j, c.q, c.ctr, c.sums, c.x)
            self.vectors(h, u, ks)
            return [h]
        (out,) = self.em.if_else_values(self.head, go, lambda: [c], "head")
        return out

    def loop_blocks(self, c: Cursor) -> Cursor:
        em, b = self.em, self.b
        with em.loop("narrow", lambda v: b.icmp_unsigned("<", v.c.j, self.e), c=c) as v:
            self.one_vector(v.c, 1, lambda off: em.load(self.fn.inp, off, 1),
                            lambda off, x: em.store(x, self.fn.out, off))
        return v.c

    def odd_block(self, c: Cursor, ks: ir.Value) -> Cursor:
        """Two lanes: the one whole block the pairs leave (if any), on keystream ``ks``."""
        em, b = self.em, self.b

        def go():
            here = Cursor(c.j, c.q, c.ctr, c.sums, c.x)
            self.one_vector(here, 1, lambda off: em.load(self.fn.inp, off, 1),
                            lambda off, x: em.store(x, self.fn.out, off), ks=ks)
            return [here]
        (out,) = em.if_else_values(b.icmp_unsigned("<", c.j, self.e), go, lambda: [c], "odd")
        return out

    def end_pair(self, c: Cursor, pair: ir.Value) -> tuple[ir.Value, ir.Value]:
        """Two lanes: the odd block's and the partial block's keystream from one ymm
        chain (counters c.ctr, c.ctr + 1, computed by `rest_vectors`) instead of an xmm
        chain each: lane 0 for the odd block, the partial block's lane 1 after an odd block,
        else lane 0."""
        em, b = self.em, self.b
        odd = b.icmp_unsigned("<", c.j, self.e)
        first, second = em.lane(pair, 0), em.lane(pair, 1)
        return first, b.select(odd, second, first)

    # -- the end of the text -----------------------------------------------------------------
    def partial_block(self, c: Cursor, ks: ir.Value | None = None) -> Cursor:
        """The last p < 16 bytes (plus the extra byte): loaded and stored without touching a
        byte past them, hashed zero-padded (``ks``: its keystream, computed before)."""
        fn, em, b = self.fn, self.em, self.b
        p = self.p

        # through vector registers on two lanes only (Zen 3, same run): vaes_avx2 open
        # 257-1041 B 0.87-0.97, seal 1023-4095 B 0.98-0.99 (1.01-1.035 before the enc
        # leftover's round keys were loaded again); on aesni_pclmul_avx its dec function's
        # spills moved, open 0.95-1.06 by stack offset, and seal 1151 B 1.025
        vector = (fn.p.backend.vector_partials and fn.p.w == 2 and not fn.extra
                  and fn.mode.hashed is not None)

        def go():
            off = b.shl(self.e, _c(4))
            pn = p
            if fn.extra:  # the second slice's byte lands right after the first's partial
                bits = partial.load_partial(em, em.gep(fn.inp, off), p)
                byte = b.zext(fn.extra_byte, i128)
                bits = b.or_(bits, b.shl(byte, b.zext(b.shl(p, _c(3)), i128)))
                pn = b.add(p, _c(1))
                d = em.from_i128(bits)
            else:
                d = partial.load_block(em, em.gep(fn.inp, off), p, vector)
            mask = em.from_i128(partial.byte_mask128(em, pn))
            here = Cursor(self.e, c.q, c.ctr, c.sums, c.x)
            self.one_vector(here, 1, lambda off: d,
                            lambda off, x: partial.store_block(em, em.gep(fn.out, off), pn, x,
                                                               vector), mask, ks)
            return [here.ctr, here.sums, here.x]
        ctr, sums, x = em.if_else_values(self.has_p, go, lambda: [c.ctr, c.sums, c.x], "part")
        return Cursor(c.j, c.q, ctr, sums, x)

    def end_start(self, c: Cursor, u: int) -> tuple[ir.Value, ir.Value]:
        """(jt, nloop): where the u-vector loop will stop, and the blocks it takes."""
        b, w = self.b, self.fn.p.w
        span = b.sub(self.e, c.j)
        nloop = b.sub(span, b.urem(span, _c(u * w)))
        return b.add(c.j, nloop), nloop

    def end_vectors(self, c: Cursor, u: int) -> ir.Value:
        """How many vectors the masked end has (0..u)."""
        b, fn = self.b, self.fn
        jt, _ = self.end_start(c, u)
        nrem = b.add(b.shl(b.sub(self.e, jt), _c(4)), self.p)
        if fn.extra:
            nrem = b.add(nrem, _c(1))
        vb = 16 * fn.p.w
        return b.udiv(b.add(nrem, _c(vb - 1)), _c(vb))

    def end_keystream(self, c: Cursor, u: int) -> list[ir.Value]:
        """The masked end's keystream, u vectors (zero past its own m): independent AES
        chains, all in flight at once."""
        em, b, w = self.em, self.b, self.fn.p.w
        _, nloop = self.end_start(c, u)
        ctr_piece = ctrs.add(em, c.ctr, b.trunc(nloop, i32))
        nvec = self.end_vectors(c, u)

        def some(m: int):
            return lambda: self.piece_keystream(ctr_piece, m) + [zero(w)] * (u - m)

        return em.if_else_values(b.icmp_unsigned("==", nvec, _c(0)), lambda: [zero(w)] * u,
                                 by_count(em, nvec, 1, u, some, "ks"), "ks")

    def piece_keystream(self, ctr: ir.Value, m: int) -> list[ir.Value]:
        """The masked end's keystream, m vectors from ctr; in the one-group function for an
        end of one vector, from beside group 0 (`stitched._enc_one_group`)."""
        fn, w = self.fn, self.fn.p.w
        if fn.end_ks:  # m > 1 is not reached there (the function's assume): dropped by LLVM
            return list(fn.end_ks) + fn.keystream(ctrs.add(self.em, ctr, w), w, m - 1)
        return fn.keystream(ctr, w, m)

    def one_block(self, jt: ir.Value, n: ir.Value, x: ir.Value, q: ir.Value, ctr: ir.Value,
                  sealed: bool = False) -> list[ir.Value]:
        """dec's masked end when it is one block (n <= 16 bytes): one xmm block instead of a
        zmm vector, its product in the narrow sums (beside the length block's).  Only dec: the
        hash reads the input there, so the block's product does not wait for its AES chain.
        ``sealed``: enc's block `seal_end` sealed, hashed as read back from the output.
        Returns [the counter after it, its product]."""
        fn, em, b = self.fn, self.em, self.b
        off = b.shl(jt, _c(4))
        if sealed:
            d, _ = partial.masked_load(em, em.gep(fn.out, off), n, 1)
        else:
            d, mask = partial.masked_load(em, em.gep(fn.inp, off), n, 1)
            (ks,) = fn.keystream(ctr, 1, 1)
            partial.masked_store(em, em.gep(fn.out, off), b.xor(d, ks), mask, 1)
        h = em.xor(em.bswap_lanes(d), em.lane(x, 0))  # d: zero past the end
        return [ctrs.add(em, ctr, ir.Constant(i32, 1)), fn.f.gh.mul_parts(h, self.power(q, 1))]

    def masked_end(self, c: Cursor, u: int) -> tuple[ir.Value, Parts, Parts, ir.Value]:
        """What the u-vector loop will leave (fewer than u vectors, the partial block, the
        extra byte) as one straight-line piece of m vectors, the last one byte-masked.  Emitted
        BEFORE the loop: its AES chains then run beside the loop's instead of after them (XOR
        is order-free; every block carries its own power).  Updates c.x (the state goes to
        this piece when the loop runs zero times); returns (the counter after the text, the
        sums, the narrow sums (`one_block`'s product), the state for the length block when no
        block at all precedes it)."""
        fn, em, b, w = self.fn, self.em, self.b, self.fn.p.w
        e, p = self.e, self.p
        jt, nloop = self.end_start(c, u)
        nrem_in = b.add(b.shl(b.sub(e, jt), _c(4)), p)
        nrem = b.add(nrem_in, _c(1)) if fn.extra else nrem_in
        vb = 16 * w
        nvec = self.end_vectors(c, u)
        first_here = b.icmp_unsigned("==", nloop, _c(0))  # the piece holds block 0
        x_piece = b.select(first_here, c.x, zero(w))
        # no block at all before the length block: the state goes to it
        x_len = b.select(b.and_(first_here, b.icmp_unsigned("==", nvec, _c(0))),
                         em.lane(c.x, 0), zero(1))
        c.x = b.select(first_here, zero(w), c.x)
        q_piece = b.add(c.q, nloop)
        ctr_piece = ctrs.add(em, c.ctr, b.trunc(nloop, i32))
        sums = c.sums

        def piece(m: int):
            def go():
                src = em.gep(fn.inp, b.shl(jt, _c(4)))
                dst = em.gep(fn.out, b.shl(jt, _c(4)))
                data = [em.load(src, t * vb, w) for t in range(m - 1)]
                last_n = b.sub(nrem_in, _c((m - 1) * vb))
                d, mask = _masked_text(fn, em.gep(src, (m - 1) * vb), last_n, w)
                data.append(d)
                outs, ctr = data, ctr_piece
                if fn.end_first:  # sealed by `seal_end`: the ciphertext read back
                    outs = [em.load(dst, t * vb, w) for t in range(m - 1)]
                    n_out = b.add(last_n, _c(1)) if fn.extra else last_n
                    outs.append(partial.masked_load(em, em.gep(dst, (m - 1) * vb), n_out, w)[0])
                elif fn.mode.keystream:
                    ks = self.piece_keystream(ctr_piece, m) if self.ks is None else self.ks[:m]
                    outs = [b.xor(x, k) for x, k in zip(data, ks, strict=True)]
                    for t in range(m - 1):
                        em.store(outs[t], dst, t * vb)
                    partial.masked_store(em, em.gep(dst, (m - 1) * vb), outs[-1], mask, w)
                if fn.mode.keystream:
                    nblk = b.trunc(b.lshr(b.add(nrem, _c(15)), _c(4)), i32)
                    ctr = ctrs.add(em, ctr_piece, nblk)
                acc = sums
                if fn.mode.hashed is not None:
                    for t in range(m):
                        hv = fn.mode.hashed_value(data[t], outs[t])
                        if t == m - 1 and fn.mode.hashes_output:
                            hv = partial.select_bytes(em, mask, hv, w)  # past the end: zero
                        h = em.bswap_lanes(hv)
                        if t == 0:
                            h = em.xor(h, x_piece)
                        acc = fn.f.gh.accumulate(acc, h, self.power(b.add(q_piece, _c(t * w)), w))
                return [ctr, acc, fn.f.gh.zero_parts(1)]
            return go

        pieces = by_count(em, nvec, 1, u, piece, "mtail")

        def one():
            ctr, prod = self.one_block(jt, nrem, x_piece, q_piece, ctr_piece)
            return [ctr, sums, prod]

        def one_back():  # `seal_end`'s one xmm block, read back
            ctr, prod = self.one_block(jt, nrem, x_piece, q_piece, ctr_piece, sealed=True)
            return [ctr, sums, prod]

        def some():
            if fn.end_first:
                return em.if_else_values(b.icmp_unsigned("<=", nrem, _c(16)), one_back,
                                         pieces, "mone")
            if not (fn.mode.keystream and fn.mode.hashes_input):
                return pieces()
            return em.if_else_values(b.icmp_unsigned("<=", nrem, _c(16)), one, pieces, "mone")
        ctr_end, sums, narrow = em.if_else_values(
            b.icmp_unsigned("==", nvec, _c(0)),
            lambda: [ctr_piece, sums, fn.f.gh.zero_parts(1)], some, "mrem")
        return ctr_end, sums, narrow, x_len

    def length_block(self, sums: Parts, x: ir.Value) -> Parts:
        fn, em = self.fn, self.em

        def go():
            ln = em.xor(em.load(fn.io, 32), x)
            return [fn.f.gh.accumulate(sums, ln, fn.f.power(fn.ctx, 1, 1))]
        (out,) = em.if_else_values(self.has_len, go, lambda: [sums], "len")
        return out

    # -- all of it ---------------------------------------------------------------------------
    def run(self) -> tuple[ir.Value, ir.Value]:
        """Returns (Y, ctr): Y reduced, one block."""
        fn, em, b, w = self.fn, self.em, self.b, self.fn.p.w
        gh = fn.f.gh
        c = self.cur
        u = fn.leftover_vectors
        masked = self.masked
        if masked:
            ctr_end, c.sums, narrow, x_len = self.masked_end(c, u)
        else:
            narrow = gh.zero_parts(1)
        if self.head_ks is not None:
            c = self.head_vectors(c, u, self.head_ks)
        if u > 1:
            c = self.loop_vectors("wide4", c, u)
        if masked:
            wide = c.sums
            c.ctr = ctr_end
            x = x_len  # else the state went to the masked piece or to the loop's first vector
        else:
            # the SSE backend: 1-2 KiB 0.96-1.00 but 4-64 KiB 1.01-1.026 (spill slots moved).
            # dec on two lanes too: vaes_avx2 open with 5-7 blocks after the groups had cost
            # 1.05-1.09x seal there; with the pieces 0.92-0.94 of the one-vector loop, 1.5-4
            # KiB 0.94-0.97, 385 B 1.01 (Zen 4, same run, two stack offsets)
            rest = u > 1 and fn.p.backend.vex and (
                fn.mode.hashes_output or (w == 2 and fn.mode.keystream and fn.mode.hashes_input))
            # two lanes: the end pair's chain in the rest's piece (vaes_avx2 seal with an odd
            # or partial block 0.94-0.98, same run); one lane's partial block: 0.97-1.04
            with_end = rest and w == 2 and fn.mode.keystream and not fn.extra
            end_ks = None
            if rest:
                c, end_ks = self.rest_vectors(c, u, with_end)
            else:  # dec on one lane: straight-line rest pieces moved its registers
                c = self.loop_vectors("wide", c, 1)
            wide = c.sums
            one = Cursor(c.j, c.q, c.ctr, narrow, em.lane(c.x, 0) if w > 1 else c.x)
            if with_end:
                ks_odd, ks_part = self.end_pair(one, end_ks)
                one = self.partial_block(self.odd_block(one, ks_odd), ks_part)
            else:
                one = self.partial_block(self.loop_blocks(one))
            c.ctr, narrow, x = one.ctr, one.sums, one.x
        if fn.mode.hashed is None:
            return zero(1), c.ctr
        narrow = self.length_block(narrow, x)
        y = gh.reduce(gh.add(gh.fold_parts(wide) if w > 1 else wide, narrow))
        # nothing at all to hash (r == 0): the state passes through unchanged
        y = b.select(b.icmp_unsigned("==", self.r, _c(0)), em.lane(self.s, 0) if w > 1 else self.s,
                     y)
        return y, c.ctr
