"""The short path: a seal or open of at most SHORT_BLOCKS blocks of text with a 96-bit nonce and
at most 16 bytes of AAD, as one straight-line piece per block count.

Why a separate path: through the general one a 16-byte seal runs J0 and E(J0) (vg.setup), the
AAD (its own multiply and reduction, vg.bulk.hash), then the text and the length block
(vg.bulk.enc: another reduction), five calls and the GHASH state through memory in between.
Here everything is known at once: the counter blocks are J0 with a constant low byte (no
increment, no carry: at most 1 + SHORT_BLOCKS < 256), so E(J0) and every keystream block are
independent AES chains started together, and A, the text blocks and the length block are
hashed as one aggregated sum A*H^(m+2) + C1*H^(m+1) + .. + Cm*H^2 + L*H with one reduction.

Width: from WIDE_FROM blocks on the VAES backends the whole blocks go two to a ymm vector
(keystream, data and their multiplies by two powers at once, summed into the one reduction);
E(J0) and the last block, which may be partial, stay one block wide.  Below that, one block
wide: the serial chain is the same and the wide set-up only adds.  Not zmm: on Zen 4 a zmm
``vaesenc`` issues once per cycle, two ymm ones do the same work.  Why 8 blocks (same-run A/B,
Zen 4): at 65-128 B this path took 0.55-0.8x the general path's time on every x86 backend; 16
blocks won at 129-256 B too but doubled the generated IR and grew the object by half.

Every branch is on a length (public), every address is a buffer plus a length.
"""

from __future__ import annotations

from llvmlite import ir

from ..ir import aes, partial
from ..ir.core import Emitter, dvec, i8, i32, i64, i128, ptr, vec, zero
from .common import Fn, Params
from .modes import DEC, ENC, Mode

SHORT_BLOCKS = 8  # texts of at most 128 bytes
WIDE = 2  # blocks per vector (ymm) where the backend has VAES
WIDE_FROM = 3  # blocks: from here whole blocks go WIDE to a vector
MAX_AAD = 16


class _VolatileLoad(ir.LoadInstr):
    def descr(self, buf):
        before: list[str] = []
        super().descr(before)
        buf.append(before[0].replace("load ", "load volatile ", 1))


def nonce_block(em: Emitter, nonce: ir.Value) -> ir.Value:
    """The 12 nonce bytes in the low 12 bytes of a block (the rest zero), read as three 4-byte
    loads, volatile so LLVM does not merge them into a wider load.  Why: a caller that has just
    written the nonce (an 8-byte store of bytes 4..11, or a 4-byte store of bytes 8..11, as TLS
    stacks do with the sequence number) leaves a store in flight; a load forwards from it only
    if it lies inside it.  An 8-byte load of bytes 0..7 straddles the 8-byte store and waits for
    it to retire; 4-byte loads of 0..3, 4..7 and 8..11 each lie inside any such store."""
    b = em.b
    v = ir.Constant(dvec(1), [ir.Constant(i32, 0)] * 4)
    for k in range(3):
        ld = _VolatileLoad(b.block, em.gep(nonce, 4 * k), typ=i32)
        ld.align = 1
        b._insert(ld)
        v = b.insert_element(v, ld, ir.Constant(i32, k))
    return v


def counter_block(em: Emitter, nv: ir.Value, c: int) -> ir.Value:
    """nonce || [c]_32 (big-endian, c < 256: only byte 15 is set)."""
    top = ir.Constant(dvec(1), [ir.Constant(i32, x) for x in (0, 0, 0, c << 24)])
    return em.b.bitcast(em.b.or_(nv, top), vec(1))


def counter_vector(em: Emitter, nv: ir.Value, c: int, w: int) -> ir.Value:
    """w counter blocks nonce || [c + l]_32 for lanes l = 0 .. w-1 (c + w <= 256)."""
    top = ir.Constant(dvec(w), [ir.Constant(i32, x) for lane in range(w)
                                for x in (0, 0, 0, (c + lane) << 24)])
    return em.b.bitcast(em.b.or_(em.b.bitcast(em.broadcast(em.b.bitcast(nv, vec(1)), w), dvec(w)),
                                 top), vec(w))


def load_upto16(fn: Fn, p: ir.Value, n: ir.Value) -> ir.Value:
    """n (0..16) bytes at p, zero padded, never reading past them."""
    em, b = fn.em, fn.b
    if fn.params.backend.masked:
        return partial.masked_load(em, p, n, 1)[0]
    (v,) = em.if_else_values(b.icmp_unsigned("==", n, ir.Constant(i64, 16)),
                             lambda: [em.load(p)],
                             lambda: [em.from_i128(partial.load_partial(em, p, n))], "ld16")
    return v


def with_byte(fn: Fn, v: ir.Value, at: ir.Value, byte: ir.Value) -> ir.Value:
    """v (zero from byte ``at`` on, at in 0..16) with ``byte`` at position ``at``; a zero byte
    leaves v as it is, so at = 16 takes byte = 0 (the shift is reduced mod 16: never poison)."""
    em, b = fn.em, fn.b
    sh = b.zext(b.shl(b.and_(at, ir.Constant(i64, 15)), ir.Constant(i64, 3)), i128)
    return em.from_i128(b.or_(em.to_i128(v), b.shl(b.zext(byte, i128), sh)))


def store_upto16(fn: Fn, p: ir.Value, n: ir.Value, v: ir.Value) -> None:
    em, b = fn.em, fn.b
    if fn.params.backend.masked:
        partial.masked_store(em, p, v, partial.mask_bits(em, n, 1), 1)
        return

    def whole():
        em.store(v, p)
        return []

    def part():
        partial.store_partial(em, p, n, em.to_i128(v))
        return []
    em.if_else_values(b.icmp_unsigned("==", n, ir.Constant(i64, 16)), whole, part, "st16")


def symbol(mode: Mode, extra: bool = False) -> str:
    return f"vg.short.{mode.name}" + (".byte" if extra else "")


def build_short(module: ir.Module, params: Params, mode: Mode, extra: bool = False) -> None:
    """vg.short.<mode>(ctx, nonce, aad, aad_len, in, out, len) -> the full 16-byte tag (memory
    order).  The caller checks the shape: nonce of 12 bytes, aad_len <= MAX_AAD, len <=
    16 * SHORT_BLOCKS.

    ``extra``: vg.short.<mode>.byte(ctx, nonce, aad, aad_len, in, out, len0, byte, nb), the
    record shape: len0 bytes at ``in`` then nb (0 or 1) more, ``byte`` (0 when nb is 0), passed
    by value.  The byte goes into the last block's register (after the len0 - 16(m-1) bytes read
    from ``in``): the text of two pieces is sealed where it lies, with no copy to assemble it
    and no store-to-load forwarding stall on the assembled block.  The caller checks
    len0 + nb <= 16 * SHORT_BLOCKS."""
    args = [ptr, ptr, ptr, i64, ptr, ptr, i64] + ([i8, i64] if extra else [])
    f = Fn(module, params, symbol(mode, extra), vec(1), args)
    em, b = f.em, f.b
    ctx, nonce, aad, al, inp, out, ln = f.args[:7]
    if extra:
        byte, nb = f.args[7:]
        ln = b.add(ln, nb)  # the text's length: the last block holds the byte
    nv = nonce_block(em, nonce)
    a = em.bswap_lanes(load_upto16(f, aad, al))
    lens = b.insert_element(zero(1), b.shl(ln, ir.Constant(i64, 3)), ir.Constant(i32, 0))
    lens = b.insert_element(lens, b.shl(al, ir.Constant(i64, 3)), ir.Constant(i32, 1))
    nblk = b.lshr(b.add(ln, ir.Constant(i64, 15)), ir.Constant(i64, 4))

    def piece(nr: int, m: int) -> None:
        """m blocks of text (the last one 1..16 bytes), nr rounds."""
        w = WIDE if params.backend.width >= WIDE and m >= WIDE_FROM else 1
        whole = m - 1 if m else 0  # the last block may be partial: one block wide, always
        pairs = whole // w if w > 1 else 0  # vectors of w whole blocks from block 0
        singles = list(range(w * pairs, m))  # blocks one block wide (the last among them)
        rks1 = f.round_keys(ctx, nr, 1)
        ys = aes.aes_encrypt(em, f.prims, [counter_block(em, nv, 1)]
                             + [counter_block(em, nv, 2 + k) for k in singles], rks1)
        ej0, ks1 = ys[0], dict(zip(singles, ys[1:], strict=True))
        ksw = []
        if pairs:
            ksw = aes.aes_encrypt(em, f.prims, [counter_vector(em, nv, 2 + w * v, w)
                                                for v in range(pairs)], f.round_keys(ctx, nr, w))
        gh = f.gh
        acc = gh.accumulate(None, a, f.power(ctx, m + 2, 1))
        accw = None
        for v in range(pairs):  # blocks w*v .. w*v + w - 1 at H^(m+1-wv) downwards
            off = 16 * w * v
            d = em.load(inp, off, w)
            o = b.xor(d, ksw[v])
            em.store(o, out, off)
            accw = gh.accumulate(accw, em.bswap_lanes(mode.hashed_value(d, o)),
                                 f.power(ctx, m + 1 - w * v, w))
        if accw is not None:
            acc = gh.add(acc, gh.fold_parts(accw))
        if m:
            last_n = b.sub(ln, ir.Constant(i64, 16 * (m - 1)))
        for k in singles:
            src, dst = em.gep(inp, 16 * k), em.gep(out, 16 * k)
            if k < m - 1:
                d = em.load(src)
            elif extra:
                d = with_byte(f, load_upto16(f, src, b.sub(last_n, nb)), b.sub(last_n, nb),
                              byte)
            else:
                d = load_upto16(f, src, last_n)
            o = b.xor(d, ks1[k])
            if k < m - 1:
                em.store(o, dst)
            else:
                store_upto16(f, dst, last_n, o)
                if mode.hashes_output:  # the keystream past the text is not ciphertext
                    o = em.from_i128(b.and_(em.to_i128(o), partial.byte_mask128(em, last_n)))
            acc = gh.accumulate(acc, em.bswap_lanes(mode.hashed_value(d, o)),
                                f.power(ctx, m + 1 - k, 1))
        acc = gh.accumulate(acc, lens, f.power(ctx, 1, 1))
        b.ret(em.xor(em.bswap_lanes(gh.reduce(acc)), ej0))

    fail = b.append_basic_block("nr.none")

    def arm(nr: int) -> None:  # one straight-line piece per block count, each returning
        swm = b.switch(nblk, fail)
        for m in range(SHORT_BLOCKS + 1):
            pb = b.append_basic_block(f"nr{nr}.m{m}")
            swm.add_case(ir.Constant(i64, m), pb)
            b.position_at_end(pb)
            piece(nr, m)
    f.dispatch_nr(ctx, arm)
    b.branch(fail)
    b.position_at_end(fail)  # a context key_init did not finish, or a caller's shape error
    b.ret(zero(1))


def fits(b: ir.IRBuilder, nl: ir.Value, al: ir.Value, ln: ir.Value) -> ir.Value:
    """Whether a message takes the short path (lengths only: public)."""
    c = lambda x: ir.Constant(i64, x)  # noqa: E731
    return b.and_(b.and_(b.icmp_unsigned("==", nl, c(12)), b.icmp_unsigned("<=", al, c(MAX_AAD))),
                  b.icmp_unsigned("<=", ln, c(16 * SHORT_BLOCKS)))


def build_all(module: ir.Module, params: Params) -> None:
    for mode in (ENC, DEC):
        build_short(module, params, mode)
    build_short(module, params, ENC, extra=True)


__all__ = ["MAX_AAD", "SHORT_BLOCKS", "build_all", "fits", "nonce_block", "symbol", "with_byte"]
