"""The three primitives a backend supplies: aesenc, aesenclast, clmul.

``x86`` maps them to AES-NI / VAES and (V)PCLMULQDQ intrinsics at the operand's width.
``portable`` writes them in plain LLVM IR with no memory index and no branch that depends on
data: SubBytes is the GF(2^8) inverse (x^254 by square-and-multiply on all 16 bytes at once)
followed by the affine map, and the carry-less multiply is a bit-serial loop of masked XORs.
The portable forms are emitted once per module as functions, so a kernel calls them rather
than inlining thousands of instructions per round.
"""

from __future__ import annotations

from llvmlite import ir

from .core import Emitter, bvec, i8, i32, i64, i128, vec, width_of

_SUFFIX = {1: "", 2: ".256", 4: ".512"}


class X86Prims:
    name = "x86"

    def __init__(self, em: Emitter):
        self.em = em

    def _aes(self, op: str, s: ir.Value, k: ir.Value) -> ir.Value:
        w = width_of(s)
        fn = self.em.intrinsic(f"llvm.x86.aesni.{op}{_SUFFIX[w]}", vec(w), [vec(w), vec(w)])
        return self.em.b.call(fn, [s, k])

    def aesenc(self, s: ir.Value, k: ir.Value) -> ir.Value:
        return self._aes("aesenc", s, k)

    def aesenclast(self, s: ir.Value, k: ir.Value) -> ir.Value:
        return self._aes("aesenclast", s, k)

    def clmul(self, a: ir.Value, b: ir.Value, imm: int) -> ir.Value:
        """Per 128-bit lane: qword imm&1 of a times qword (imm>>4)&1 of b."""
        w = width_of(a)
        name = "llvm.x86.pclmulqdq" + _SUFFIX[w]
        fn = self.em.intrinsic(name, vec(w), [vec(w), vec(w), i8])
        return self.em.b.call(fn, [a, b, ir.Constant(i8, imm)])


# ShiftRows on AES-NI's byte order (byte 4c + r is row r, column c).
_SHIFT_ROWS = [4 * ((c + r) % 4) + r for c in range(4) for r in range(4)]
_ROT_COLUMN = {k: [4 * c + (r + k) % 4 for c in range(4) for r in range(4)] for k in (1, 2, 3)}


class PortablePrims:
    """Constant-time AES round and carry-less multiply in plain IR (width 1 only)."""

    name = "portable"

    def __init__(self, em: Emitter):
        self.em = em

    def _fn(self, name: str, build, nargs: int, extra: list | None = None) -> ir.Function:
        mod = self.em.module
        fn = mod.globals.get(name)
        if fn is not None:
            return fn
        fn = ir.Function(mod, ir.FunctionType(vec(1), [vec(1)] * nargs + (extra or [])), name=name)
        fn.linkage = "internal"
        fn.attributes.add("noinline")
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        sub = Emitter(mod, b)
        b.ret(build(sub, *fn.args))
        return fn

    # GF(2^8) arithmetic on 16 bytes at once
    @staticmethod
    def _splat(x: int) -> ir.Constant:
        return ir.Constant(bvec(1), [ir.Constant(i8, x)] * 16)

    def _xtime(self, em: Emitter, a: ir.Value) -> ir.Value:
        b = em.b
        hi = b.lshr(a, self._splat(7))
        mask = b.sub(self._splat(0), hi)  # 0xff where the top bit was set
        return b.xor(b.shl(a, self._splat(1)), b.and_(mask, self._splat(0x1B)))

    def _gmul(self, em: Emitter, a: ir.Value, y: ir.Value) -> ir.Value:
        b = em.b
        p = self._splat(0)
        for i in range(8):
            bit = b.and_(b.lshr(y, self._splat(i)), self._splat(1))
            p = b.xor(p, b.and_(a, b.sub(self._splat(0), bit)))
            if i < 7:
                a = self._xtime(em, a)
        return p

    def _sub_bytes(self, em: Emitter, x: ir.Value) -> ir.Value:
        b = em.b
        g = lambda u, v: self._gmul(em, u, v)  # noqa: E731
        x2 = g(x, x)
        x3 = g(x2, x)
        x6 = g(x3, x3)
        x12 = g(x6, x6)
        x15 = g(x12, x3)
        x30 = g(x15, x15)
        x60 = g(x30, x30)
        x120 = g(x60, x60)
        x240 = g(x120, x120)
        x14 = g(x12, x2)
        inv = g(x240, x14)  # x^254 = x^-1 (and 0 -> 0)
        out = inv
        for k in (1, 2, 3, 4):  # the affine map of FIPS-197 5.1.1
            rot = b.or_(b.shl(inv, self._splat(k)), b.lshr(inv, self._splat(8 - k)))
            out = b.xor(out, rot)
        return b.xor(out, self._splat(0x63))

    def _perm(self, em: Emitter, v: ir.Value, idx: list[int]) -> ir.Value:
        mask = ir.Constant(ir.VectorType(i32, 16), [ir.Constant(i32, i) for i in idx])
        return em.b.shuffle_vector(v, ir.Constant(v.type, None), mask)

    def _round(self, em: Emitter, s: ir.Value, k: ir.Value, last: bool) -> ir.Value:
        b = em.b
        x = self._perm(em, self._sub_bytes(em, b.bitcast(s, bvec(1))), _SHIFT_ROWS)
        if not last:
            r1, r2, r3 = (self._perm(em, x, _ROT_COLUMN[j]) for j in (1, 2, 3))
            x = em.xor(self._xtime(em, b.xor(x, r1)), r1, r2, r3)
        return b.xor(b.bitcast(x, vec(1)), k)

    def aesenc(self, s: ir.Value, k: ir.Value) -> ir.Value:
        fn = self._fn("vg.portable.aesenc", lambda em, s, k: self._round(em, s, k, False), 2)
        return self.em.b.call(fn, [s, k])

    def aesenclast(self, s: ir.Value, k: ir.Value) -> ir.Value:
        fn = self._fn("vg.portable.aesenclast", lambda em, s, k: self._round(em, s, k, True), 2)
        return self.em.b.call(fn, [s, k])

    def _clmul64(self, em: Emitter, a: ir.Value, bsel: ir.Value, imm: ir.Value) -> ir.Value:
        b = em.b
        x = b.extract_element(a, b.and_(imm, ir.Constant(i32, 1)))
        y = b.extract_element(bsel, b.lshr(imm, ir.Constant(i32, 4)))
        xw = b.zext(x, i128)

        with em.loop("clmul", lambda v: b.icmp_unsigned("<", v.i, ir.Constant(i32, 64)),
                     i=ir.Constant(i32, 0), z=ir.Constant(i128, 0)) as v:
            bit = b.and_(b.lshr(y, b.zext(v.i, i64)), ir.Constant(i64, 1))
            mask = b.sub(ir.Constant(i128, 0), b.zext(bit, i128))  # all ones or zero
            v.z = b.xor(v.z, b.and_(b.shl(xw, b.zext(v.i, i128)), mask))
            v.i = b.add(v.i, ir.Constant(i32, 1))
        z = v.z
        return b.bitcast(z, vec(1))

    def clmul(self, a: ir.Value, bv: ir.Value, imm: int) -> ir.Value:
        assert width_of(a) == 1, "the portable backend is one block wide"
        fn = self._fn("vg.portable.clmul", lambda em, a, b, imm: self._clmul64(em, a, b, imm), 2,
                      [i32])
        return self.em.b.call(fn, [a, bv, ir.Constant(i32, imm)])


def make(kind: str, em: Emitter) -> X86Prims | PortablePrims:
    return {"x86": X86Prims, "portable": PortablePrims}[kind](em)
