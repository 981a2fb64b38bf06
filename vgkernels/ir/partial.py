"""Loads and stores of fewer than 16 bytes (or, with AVX-512, of a partial vector), never
touching a byte past the buffer.

The scalar form uses overlapping loads (two 8-byte or two 4-byte loads, or three single
bytes), the way small memcpy is done: at most three accesses and one branch per size class.
The vector form (x86 with AVX) does the same overlapping accesses straight into and out of
xmm registers, one pshufb putting the second in place.  The masked form uses AVX-512BW byte
masks, which suppress faults on masked-off bytes.
"""

from __future__ import annotations

from collections.abc import Callable

from llvmlite import ir

from .core import Emitter, bvec, i1, i8, i32, i64, i128, ptr, vec

i16 = ir.IntType(16)


def _shl128(em: Emitter, x: ir.Value, nbytes: ir.Value) -> ir.Value:
    b = em.b
    return b.shl(x, b.zext(b.shl(nbytes, ir.Constant(i64, 3)), i128))


def load_partial(em: Emitter, p: ir.Value, n: ir.Value) -> ir.Value:
    """n (0..15) bytes from p into the low bytes of an i128, the rest zero."""
    b = em.b

    def two(typ: ir.IntType, size: int):
        def f():
            lo = b.zext(em.load_int(p, 0, typ), i128)
            tail_at = b.sub(n, ir.Constant(i64, size))
            hi = b.zext(em.load_int(p, tail_at, typ), i128)
            return [b.or_(lo, _shl128(em, hi, tail_at))]
        return f

    def small():
        def f():
            last = b.sub(n, ir.Constant(i64, 1))
            mid = b.lshr(n, ir.Constant(i64, 1))
            x0 = b.zext(em.load_int(p, 0, i8), i128)
            x1 = _shl128(em, b.zext(em.load_int(p, mid, i8), i128), mid)
            x2 = _shl128(em, b.zext(em.load_int(p, last, i8), i128), last)
            return [b.or_(x0, b.or_(x1, x2))]
        return em.if_else_values(b.icmp_unsigned("!=", n, ir.Constant(i64, 0)), f,
                                 lambda: [ir.Constant(i128, 0)], "ld1")

    def upto7():
        return em.if_else_values(b.icmp_unsigned(">=", n, ir.Constant(i64, 4)),
                                 two(ir.IntType(32), 4), small, "ld4")

    (v,) = em.if_else_values(b.icmp_unsigned(">=", n, ir.Constant(i64, 8)),
                             two(i64, 8), upto7, "ld8")
    return v


def store_partial(em: Emitter, p: ir.Value, n: ir.Value, v: ir.Value) -> None:
    """Store the low n (0..16) bytes of the i128 v at p."""
    b = em.b

    def two(typ: ir.IntType, size: int):
        def f():
            em.store_int(b.trunc(v, typ), p, 0)
            tail_at = b.sub(n, ir.Constant(i64, size))
            hi = b.lshr(v, b.zext(b.shl(tail_at, ir.Constant(i64, 3)), i128))
            em.store_int(b.trunc(hi, typ), p, tail_at)
            return []
        return f

    def byte_at(off: ir.Value):
        x = b.lshr(v, b.zext(b.shl(off, ir.Constant(i64, 3)), i128))
        em.store_int(b.trunc(x, i8), p, off)

    def small():
        def f():
            byte_at(ir.Constant(i64, 0))
            byte_at(b.lshr(n, ir.Constant(i64, 1)))
            byte_at(b.sub(n, ir.Constant(i64, 1)))
            return []
        return em.if_else_values(b.icmp_unsigned("!=", n, ir.Constant(i64, 0)), f, lambda: [],
                                 "st1")

    def upto7():
        return em.if_else_values(b.icmp_unsigned(">=", n, ir.Constant(i64, 4)),
                                 two(ir.IntType(32), 4), small, "st4")

    em.if_else_values(b.icmp_unsigned(">=", n, ir.Constant(i64, 8)), two(i64, 8), upto7, "st8")


# -- the x86 vector form: overlapping accesses straight into and out of xmm registers ------------


def splat_byte(em: Emitter, x: ir.Value, w: int = 1) -> ir.Value:
    """The i8 x in every byte lane of a W-block vector (vpbroadcastb where AVX2 has it)."""
    b, bt = em.b, bvec(w)
    one = b.insert_element(ir.Constant(bt, None), x, ir.Constant(i32, 0))
    return b.shuffle_vector(one, ir.Constant(bt, None),
                            ir.Constant(ir.VectorType(i32, 16 * w), None))  # lane 0


def _shift_index(em: Emitter, k: ir.Value) -> ir.Value:
    """pshufb's index for "byte lane j takes byte j + k" (k an i64, -15..15); outside 0..15
    (bit 7 of the index set) the lane is zero.  It follows from lengths alone."""
    b = em.b
    return b.add(splat_byte(em, b.trunc(k, i8)), ir.Constant(bvec(1), list(range(16))))


def _shuffle(em: Emitter, v: ir.Value, index: ir.Value) -> ir.Value:
    lanes = bvec(1)
    pshufb = em.intrinsic("llvm.x86.ssse3.pshuf.b.128", lanes, [lanes, lanes])
    return em.b.call(pshufb, [em.b.bitcast(v, lanes), index])


def _by_size(em: Emitter, n: ir.Value, two: Callable, one: Callable, none: Callable,
             tag: str) -> list:
    """n (0..15) bytes as two overlapping accesses of 8, 4 or 2 bytes, or one byte, or none:
    ``two(typ, size)`` / ``one()`` / ``none()`` each return the branch's values."""
    b = em.b

    def ge(k: int) -> ir.Value:
        return b.icmp_unsigned(">=", n, ir.Constant(i64, k))

    def upto1():
        return em.if_else_values(b.icmp_unsigned("!=", n, ir.Constant(i64, 0)), one, none,
                                 f"{tag}1")

    def upto3():
        return em.if_else_values(ge(2), lambda: two(i16, 2), upto1, f"{tag}2")

    def upto7():
        return em.if_else_values(ge(4), lambda: two(i32, 4), upto3, f"{tag}4")
    return em.if_else_values(ge(8), lambda: two(i64, 8), upto7, f"{tag}8")


def load_partial_vec(em: Emitter, p: ir.Value, n: ir.Value) -> ir.Value:
    """load_partial's bytes as one block (vec(1)), x86 only: the two overlapping loads go
    straight into vector registers and the second is moved into place by one pshufb (lane j
    takes its byte j + size - n), whose index is ready before the data.  load_partial moves
    the halves through general registers (shifts, cmovs, two GPR-to-vector moves) on the way
    to the multiply: a 13-byte AAD is the first thing a short seal hashes."""
    b = em.b

    def part(typ: ir.IntType, at: ir.Value | int) -> ir.Value:  # size bytes, zero above
        words = ir.VectorType(typ, 128 // typ.width)
        v = b.insert_element(ir.Constant(words, None), em.load_int(p, at, typ),
                             ir.Constant(i32, 0))
        return b.bitcast(v, bvec(1))

    def two(typ: ir.IntType, size: int) -> list:
        # lane j takes byte j - (n - size) of the second load: below n - size, zero
        index = _shift_index(em, b.sub(ir.Constant(i64, size), n))
        hi = _shuffle(em, part(typ, b.sub(n, ir.Constant(i64, size))), index)
        return [b.bitcast(b.or_(part(typ, 0), hi), vec(1))]
    (v,) = _by_size(em, n, two, lambda: [b.bitcast(part(i8, 0), vec(1))],
                    lambda: [ir.Constant(vec(1), None)], "vld")
    return v


def store_partial_vec(em: Emitter, p: ir.Value, n: ir.Value, v: ir.Value) -> None:
    """store_partial from a block (vec(1)), x86 only: the first and the last `size` bytes
    stored straight from vector registers, the last ones moved down by one pshufb (lane j
    takes byte j + n - size)."""
    b = em.b

    def low(typ: ir.IntType, x: ir.Value) -> ir.Value:
        words = ir.VectorType(typ, 128 // typ.width)
        return b.extract_element(b.bitcast(x, words), ir.Constant(i32, 0))

    def two(typ: ir.IntType, size: int) -> list:
        em.store_int(low(typ, v), p, 0)
        tail_at = b.sub(n, ir.Constant(i64, size))
        em.store_int(low(typ, _shuffle(em, v, _shift_index(em, tail_at))), p, tail_at)
        return []

    def one() -> list:
        em.store_int(low(i8, v), p, 0)
        return []
    _by_size(em, n, two, one, lambda: [], "vst")


def load_block(em: Emitter, p: ir.Value, n: ir.Value, vector: bool) -> ir.Value:
    """n (0..15) bytes at p as one zero-padded block: the vector form or (``vector`` false)
    through general registers."""
    return load_partial_vec(em, p, n) if vector else em.from_i128(load_partial(em, p, n))


def store_block(em: Emitter, p: ir.Value, n: ir.Value, v: ir.Value, vector: bool) -> None:
    """The low n (0..16) bytes of the block v at p, in the form `load_block` names."""
    if vector:
        store_partial_vec(em, p, n, v)
    else:
        store_partial(em, p, n, em.to_i128(v))


def byte_mask128(em: Emitter, n: ir.Value) -> ir.Value:
    """i128 with the low n (0..16) bytes set."""
    b = em.b
    bits = b.zext(b.shl(n, ir.Constant(i64, 3)), i128)
    full = b.icmp_unsigned(">=", n, ir.Constant(i64, 16))
    m = b.sub(b.shl(ir.Constant(i128, 1), bits), ir.Constant(i128, 1))
    return b.select(full, ir.Constant(i128, -1), m)


def byte_mask(em: Emitter, n: ir.Value) -> ir.Value:
    """One block (vec(1)) with the low n (0..16) bytes 0xFF, built in the vector domain: each
    byte lane compares n with its index (pcmpgtb), no select (which LLVM may lower to a cmov)
    and no trip through general registers, where byte_mask128's result has to go."""
    b, lanes = em.b, bvec(1)
    on = b.icmp_signed(">", splat_byte(em, b.trunc(n, i8)), ir.Constant(lanes, list(range(16))))
    return b.bitcast(b.sext(on, lanes), vec(1))


def mask_bits(em: Emitter, n: ir.Value, w: int) -> ir.Value:
    """<16W x i1> with the first min(n, 16W) lanes set."""
    b = em.b
    nbits = 16 * w
    ity = ir.IntType(nbits)
    full = b.icmp_unsigned(">=", n, ir.Constant(i64, nbits))
    sh = b.select(full, ir.Constant(i64, 0), n)
    m = b.sub(b.shl(ir.Constant(ity, 1), b.trunc(sh, ity)), ir.Constant(ity, 1))
    m = b.select(full, ir.Constant(ity, -1), m)
    return b.bitcast(m, ir.VectorType(i1, nbits))


def masked_load(em: Emitter, p: ir.Value, n: ir.Value, w: int) -> tuple[ir.Value, ir.Value]:
    """(vector, mask): the first n bytes at p, zeros after; masked-off bytes are not read."""
    mask = mask_bits(em, n, w)
    bt = bvec(w)
    fn = em.intrinsic(f"llvm.masked.load.v{16 * w}i8.p0", bt,
                      [ptr, i32, mask.type, bt])
    v = em.b.call(fn, [p, ir.Constant(i32, 1), mask, ir.Constant(bt, None)])
    return em.b.bitcast(v, vec(w)), mask


def masked_store(em: Emitter, p: ir.Value, v: ir.Value, mask: ir.Value, w: int) -> None:
    bt = bvec(w)
    fn = em.intrinsic(f"llvm.masked.store.v{16 * w}i8.p0", ir.VoidType(),
                      [bt, ptr, i32, mask.type])
    em.b.call(fn, [em.b.bitcast(v, bt), p, ir.Constant(i32, 1), mask])


def select_bytes(em: Emitter, mask: ir.Value, v: ir.Value, w: int) -> ir.Value:
    bt = bvec(w)
    return em.b.bitcast(em.b.select(mask, em.b.bitcast(v, bt), ir.Constant(bt, None)), vec(w))


def insert_byte(em: Emitter, v: ir.Value, mask: ir.Value, n: ir.Value, byte: ir.Value,
                w: int) -> tuple[ir.Value, ir.Value]:
    """v with `byte` at position n, where mask covers the first n bytes; returns the vector and
    the mask of its n + 1 bytes (a masked broadcast: no variable-index shuffle)."""
    b = em.b
    wider = mask_bits(em, b.add(n, ir.Constant(i64, 1)), w)
    onehot = b.xor(wider, mask)
    out = b.select(onehot, splat_byte(em, byte, w), b.bitcast(v, bvec(w)))
    return b.bitcast(out, vec(w)), wider

