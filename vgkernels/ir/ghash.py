"""GHASH in IR, in the byte-reflected representation PCLMULQDQ wants.

A block is byte-swapped into a 128-bit integer whose bit 127 is the coefficient of x^0.  The
carry-less product of two such values is (a*b*x) reflected over 256 bits, so the key powers are
stored divided by x (``H/x``: shift left by one, folding the carry with 0xc2...01); then
``reduce`` yields a*b directly.  Products are kept unreduced as (lo, mid, hi) = (a0 b0,
a0 b1 + a1 b0, a1 b1) and summed over many blocks, so one reduction serves a whole group
(aggregated reduction).  The reduction folds the low half twice by the 64-bit constant
0xc200000000000000 (x^128 = x^7 + x^2 + x + 1, reflected), without a 1-bit shift.
"""

from __future__ import annotations

from dataclasses import dataclass

from llvmlite import ir

from .core import Emitter, Reloaded, const_vec, i128, use, width_of, zero

GFPOLY = (1, 0xC200000000000000)  # per lane: low qword 1, high qword 0xc2 << 56


@dataclass
class Parts:
    lo: ir.Value
    mi: ir.Value | None  # None only between `Ghash.accumulate_outer` and its middles
    hi: ir.Value


class Ghash:
    """``karatsuba``: the middle product as (a0+a1)(b0+b1), 3 multiplies instead of 4.

    With a = a1 x^64 + a0 and b = b1 x^64 + b0 (64-bit halves), a*b = a1 b1 x^128 +
    (a1 b0 + a0 b1) x^64 + a0 b0, and in characteristic 2 the middle term is
    (a0 + a1)(b0 + b1) - a0 b0 - a1 b1 = (a0 + a1)(b0 + b1) + a0 b0 + a1 b1.  The parts carry
    the raw (a0+a1)(b0+b1) in ``mi``; since every step is linear, ``reduce`` adds lo and hi
    into it once per *sum* of products (aggregated), so the extra work per block is one
    shuffle and one XOR (``fold_halves``), and b0+b1 of a key power is computed once per
    function (``h_folded``)."""

    def __init__(self, em: Emitter, prims, karatsuba: bool = False, paired: bool = False):
        self.em = em
        self.p = prims
        self.karatsuba = karatsuba
        # a group's middle operands two vectors at a time (`accumulate_middles`)
        self.paired = karatsuba and paired

    def fold_halves(self, v: ir.Value) -> ir.Value:
        """a0 ^ a1 in both qwords of every lane (Karatsuba's middle operand)."""
        return self.em.xor(v, self.em.swap_qwords(v))

    def mul_parts(self, a: ir.Value, h: ir.Value | Reloaded,
                  h_folded: ir.Value | Reloaded | None = None) -> Parts:
        """Unreduced carry-less product, lane by lane.  A `Reloaded` key power is loaded
        again by each multiply (a memory operand of its ``vpclmulqdq``)."""
        b = self.em.b

        def c(x: ir.Value | Reloaded, y: ir.Value | Reloaded, imm: int) -> ir.Value:
            return self.p.clmul(use(x), use(y), imm)
        if self.karatsuba:
            hk = h_folded if h_folded is not None else self.fold_halves(use(h))
            return Parts(c(a, h, 0x00), c(self.fold_halves(a), hk, 0x00), c(a, h, 0x11))
        return Parts(c(a, h, 0x00), b.xor(c(a, h, 0x01), c(a, h, 0x10)), c(a, h, 0x11))

    def accumulate_outer(self, acc: Parts | None, a: ir.Value, h: ir.Value) -> Parts:
        """Karatsuba's first half of acc += a * h: the low and high products; the middle one
        comes with the next vector's (`accumulate_middles`)."""
        c, x = self.p.clmul, self.em.xor
        lo, hi = c(a, h, 0x00), c(a, h, 0x11)
        if acc is None:
            return Parts(lo, None, hi)
        return Parts(x(acc.lo, lo), acc.mi, x(acc.hi, hi))

    def accumulate_middles(self, acc: Parts, a: ir.Value, ha: ir.Value, hfa: ir.Value | None,
                           b: ir.Value, hb: ir.Value, hfb: ir.Value | None) -> Parts:
        """The middle products of two vectors, whose low and high ones `accumulate_outer`
        added: per lane, [a0, b0] ^ [a1, b1] = [a0 + a1, b0 + b1] is both middle operands
        from one XOR (two unpacks and an XOR instead of a shuffle and an XOR per vector), and
        each multiply picks its qword by the immediate; a key power's half-sum is in both of
        its qwords (`fold_halves`)."""
        em, c = self.em, self.p.clmul
        hfa = hfa if hfa is not None else self.fold_halves(ha)
        hfb = hfb if hfb is not None else self.fold_halves(hb)
        m = em.xor(em.unpack_qwords(a, b, False), em.unpack_qwords(a, b, True))
        mi = em.xor(c(m, hfa, 0x00), c(m, hfb, 0x01))
        return Parts(acc.lo, mi if acc.mi is None else em.xor(acc.mi, mi), acc.hi)

    def accumulate(self, acc: Parts | None, a: ir.Value, h: ir.Value | Reloaded,
                   h_folded: ir.Value | Reloaded | None = None) -> Parts:
        """ghash_accumulate: acc += a * h (unreduced)."""
        t = self.mul_parts(a, h, h_folded)
        if acc is None:
            return t
        x = self.em.xor
        return Parts(x(acc.lo, t.lo), x(acc.mi, t.mi), x(acc.hi, t.hi))

    def reduce(self, t: Parts) -> ir.Value:
        """The 256-bit product (lo, mi, hi) reduced modulo g(x) = x^128 + x^7 + x^2 + x + 1.

        Bit-reflected: bit 127 of a reflected value is the coefficient of x^0, so the *low*
        qwords of the 256-bit product hold the *highest* powers, x^128 .. x^255, the part to
        fold away.  In this order x^128 = x^7 + x^2 + x + 1 reads as multiplying by the 64-bit
        constant 0xc2 << 56 (bits 63, 62, 57: the x, x^2, x^7 terms, reflected; the 1 term is
        D itself): folding one 64-bit digit D of the low end is D * 0xc2.. (one CLMUL, landing
        64 bits further up) plus D itself moved up 128 bits, i.e. swapped into the other qword
        (swap_qwords, no multiply; the same swap aligns the next digit with ``mi``).  Two such
        folds take the low 128 bits into the high half: the first folds lo's low qword into
        (lo's high qword, mi), the second folds the resulting low qword of mi into hi.  The
        reflected product is off by one factor of x (the 255-bit product sits one bit off in
        256 bits, see above), which the H/x-scaled key powers absorb: no 1-bit shift here."""
        em = self.em
        if self.karatsuba:
            t = Parts(t.lo, em.xor(t.mi, t.lo, t.hi), t.hi)
        poly = const_vec(width_of(t.lo), GFPOLY)
        lo_fold = self.p.clmul(poly, t.lo, 0x01)  # low qword of lo times 0xc2..
        mi = em.xor(t.mi, lo_fold, em.swap_qwords(t.lo))
        mi_fold = self.p.clmul(poly, mi, 0x01)
        return em.xor(t.hi, mi_fold, em.swap_qwords(mi))

    def mul(self, a: ir.Value, h: ir.Value) -> ir.Value:
        return self.reduce(self.mul_parts(a, h))

    def fold_parts(self, t: Parts) -> Parts:
        """Sum the W lanes of each part into one block (before a single 128-bit reduce)."""
        f = self.em.fold_lanes
        return Parts(f(t.lo), f(t.mi), f(t.hi))

    def add(self, a: Parts | None, b: Parts | None) -> Parts | None:
        if a is None or b is None:
            return a or b
        x = self.em.xor
        return Parts(x(a.lo, b.lo), x(a.mi, b.mi), x(a.hi, b.hi))

    def zero_parts(self, w: int) -> Parts:
        return Parts(zero(w), zero(w), zero(w))

    def div_x(self, h: ir.Value) -> ir.Value:
        """H/x in the reflected form: shift left by one, fold the carried-out x^0 bit back in."""
        b = self.em.b
        v = self.em.to_i128(h)
        top = b.ashr(v, ir.Constant(i128, 127))  # all ones if bit 127 was set (no branch)
        fold = ir.Constant(i128, (0xC2 << 120) | 1)
        return self.em.from_i128(b.xor(b.shl(v, ir.Constant(i128, 1)), b.and_(top, fold)))
