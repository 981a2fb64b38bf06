"""The exported C ABI (see vgkernels.abi): seal, seal_out, open, open_out, the inner kernels and
seal_two_slice, built on the bulk functions (seal_gather: `gather`).

Return codes: `vgkernels.abi.RETURN_CODES`.  Every entry fails closed (RC_CONTEXT) on a key
context that key_init did not finish, before it touches the caller's buffers.
"""

from __future__ import annotations

from llvmlite import ir

from .. import abi
from ..abi import MAX_AAD, MAX_PLAINTEXT
from ..ir import aes, partial
from ..ir import ctr as ctrs
from ..ir.core import i1, i8, i32, i64, i128, ptr, vec, void, zero
from . import short
from .common import Fn, Params, copy_from_64
from .modes import DEC, ENC


def _c(x: int) -> ir.Constant:
    return ir.Constant(i64, x)


def _ret(b: ir.IRBuilder, code: int) -> None:
    b.ret(ir.Constant(i32, code))


def build_helpers(module: ir.Module, params: Params) -> None:
    # vg.aes1(ctx, block) -> E_K(block)
    f = Fn(module, params, "vg.aes1", vec(1), [ptr, vec(1)])
    ctx, x = f.args
    results = []

    def arm(nr):
        (y,) = aes.aes_encrypt(f.em, f.prims, [x], f.round_keys(ctx, nr, 1))
        results.append((y, f.b.block))
    f.dispatch_nr(ctx, arm)
    # the switch's default (a context never initialised) falls through to here with zero
    phi = f.b.phi(vec(1), name="e")
    for y, bb in results:
        phi.add_incoming(y, bb)
    phi.add_incoming(zero(1), f.fn.blocks[0])
    f.b.ret(phi)

    # vg.ghash1(ctx, y, block) -> (y ^ rev(block)) * H, y reflected, block in memory order
    f = Fn(module, params, "vg.ghash1", vec(1), [ptr, vec(1), vec(1)])
    ctx, y, c = f.args
    f.b.ret(f.gh.mul(f.em.xor(y, f.em.bswap_lanes(c)), f.power(ctx, 1, 1)))

    # vg.setup(ctx, nonce, nonce_len, io) -> E_K(J0); io.ctr = inc32(J0) in LE form
    f = Fn(module, params, "vg.setup", vec(1), [ptr, ptr, i64, ptr])
    ctx, nonce, nl, io = f.args
    em, b = f.em, f.b

    def j0_96():
        return [short.counter_block(em, short.nonce_block(em, nonce), 1)]

    def j0_ghash():  # J0 = GHASH(IV || 0^s || [0]_64 || [len(IV)]_64)
        tmp = f.alloca_block(3)
        em.store(zero(1), tmp, 0)
        ln = b.insert_element(zero(1), b.shl(nl, _c(3)), ir.Constant(i32, 0))
        em.store(ln, tmp, 32)
        b.call(module.globals["vg.bulk.hash"], [ctx, tmp, nonce, nonce, nl, ir.Constant(i1, 1)])
        return [em.bswap_lanes(em.load(tmp, 0))]

    (j0,) = em.if_else_values(b.icmp_unsigned("==", nl, _c(12)), j0_96, j0_ghash, "j0")
    em.store(ctrs.add(em, em.bswap_lanes(j0), 1), io, 16)
    b.ret(b.call(module.globals["vg.aes1"], [ctx, j0]))


class Entry:
    """Scaffolding shared by the AEAD entry points."""

    def __init__(self, module: ir.Module, params: Params, op: str, args: list[ir.Type],
                 exported: bool = True):
        """``exported``: an entry point named prefix_op; else the internal function ``op``,
        whose callers have checked the key context."""
        self.module = module
        name = f"{params.prefix}_{op}" if exported else op
        self.f = Fn(module, params, name, i32, args, exported=exported)
        self.em, self.b = self.f.em, self.f.b
        if exported:
            self.f.fail_closed(self.f.args[0])  # every entry takes the key context first

    def call(self, name: str, args: list) -> ir.Value:
        return self.b.call(self.module.globals[name], args)

    def guard(self, cond: ir.Value, code: int) -> None:
        with self.b.if_then(cond, likely=False):
            _ret(self.b, code)

    def check_lengths(self, nl: ir.Value, ln: ir.Value | None, al: ir.Value) -> None:
        b = self.b
        self.guard(b.icmp_unsigned("==", nl, _c(0)), abi.RC_EMPTY_NONCE)
        if ln is not None:
            self.guard(b.icmp_unsigned(">", ln, _c(MAX_PLAINTEXT)), abi.RC_TEXT_TOO_LONG)
        self.guard(b.icmp_unsigned(">", al, _c(MAX_AAD)), abi.RC_AAD_TOO_LONG)

    def start(self, ctx, nonce, nl, aad, al) -> tuple[ir.Value, ir.Value]:
        """(io, E_K(J0)) with io.Y = GHASH(AAD) and io.ctr = inc32(J0)."""
        io = self.f.alloca_block(3)
        ej0 = self.call("vg.setup", [ctx, nonce, nl, io])
        em = self.em

        def one_block():  # TLS's 13 bytes: one multiply here, not a bulk call (4-8 ns)
            # through general registers: the vector form (`partial.load_partial_vec`) did
            # not pay here (Zen 3, 257 B-4 KiB: open 0.97-1.02, seal 0.99-1.07)
            a = em.bswap_lanes(short.load_upto16(self.f, aad, al, vector=False))
            em.store(self.f.gh.mul(a, self.f.power(ctx, 1, 1)), io, 0)
            return []

        def any_length():
            em.store(zero(1), io, 0)
            self.call("vg.bulk.hash", [ctx, io, aad, aad, al, ir.Constant(i1, 0)])
            return []
        em.if_else_values(self.b.icmp_unsigned("<=", al, _c(16)), one_block, any_length, "aad")
        return io, ej0

    def pub_ctr(self, nl, done=None) -> ir.Value:
        """The bulk functions' public copy of the counter after ``done`` bytes (a multiple of
        16) of text: inc32(J0) = 2 + blocks for a 96-bit nonce, else -1 (J0 depends on H)."""
        b = self.b
        at = _c(2) if done is None else b.add(_c(2), b.lshr(done, _c(4)))
        return b.select(b.icmp_unsigned("==", nl, _c(12)), at, _c(-1))

    def length_block(self, io, ln, al) -> None:
        b = self.b
        v = b.insert_element(zero(1), b.shl(ln, _c(3)), ir.Constant(i32, 0))
        v = b.insert_element(v, b.shl(al, _c(3)), ir.Constant(i32, 1))
        self.em.store(v, io, 32)

    def tag(self, io, ej0) -> ir.Value:
        return self.em.xor(self.em.bswap_lanes(self.em.load(io, 0)), ej0)


def build_seal_out(module: ir.Module, params: Params, op: str = "seal_out") -> None:
    in_place = op == "seal"
    args = [ptr, ptr, i64, ptr, i64, ptr, i64, ptr] if in_place else \
        [ptr, ptr, i64, ptr, i64, ptr, ptr, i64, ptr]
    e = Entry(module, params, op, args)
    if in_place:
        ctx, nonce, nl, aad, al, out, ln, tag = e.f.args
        inp = out
    else:
        ctx, nonce, nl, aad, al, inp, out, ln, tag = e.f.args
    e.check_lengths(nl, ln, al)

    def general():
        io, ej0 = e.start(ctx, nonce, nl, aad, al)
        e.length_block(io, ln, al)
        e.call("vg.bulk.enc", [ctx, io, inp, out, ln, ir.Constant(i1, 1), e.pub_ctr(nl)])
        return [e.tag(io, ej0)]
    (t,) = e.em.if_else_values(
        short.fits(e.b, nl, al, ln, short.medium_blocks(params)),
        lambda: [short.call(e.f, ENC, [ctx, nonce, aad, al, inp, out, ln])], general, "short")
    e.em.store(t, tag, 0)
    _ret(e.b, abi.RC_OK)


def build_open_out(module: ir.Module, params: Params, op: str = "open_out") -> None:
    in_place = op == "open"
    args = [ptr, ptr, i64, ptr, i64, ptr, i64, ptr, i64] if in_place else \
        [ptr, ptr, i64, ptr, i64, ptr, ptr, i64, ptr, i64]
    e = Entry(module, params, op, args)
    em, b = e.em, e.b
    if in_place:
        ctx, nonce, nl, aad, al, out, ln, tag, tl = e.f.args
        inp = out
    else:
        ctx, nonce, nl, aad, al, inp, out, ln, tag, tl = e.f.args
    e.check_lengths(nl, ln, al)
    e.guard(b.or_(b.icmp_unsigned("<", tl, _c(4)), b.icmp_unsigned(">", tl, _c(16))),
            abi.RC_TAG_LENGTH)

    def general():
        io, ej0 = e.start(ctx, nonce, nl, aad, al)
        e.length_block(io, ln, al)
        e.call("vg.bulk.dec", [ctx, io, inp, out, ln, ir.Constant(i1, 1), e.pub_ctr(nl)])
        return [e.tag(io, ej0)]
    (t,) = em.if_else_values(
        short.fits(b, nl, al, ln, short.medium_blocks(params, DEC)),
        lambda: [short.call(e.f, DEC, [ctx, nonce, aad, al, inp, out, ln])], general, "short")
    # the tag as an i128 made in each branch: a vector's bitcast there lets the 16-byte
    # compare stay a vector one (vpxor + vptest with SSE4.1)
    def whole() -> list[ir.Value]:
        return [b.icmp_unsigned("!=", em.to_i128(t), em.load_int(tag, 0, i128))]

    def truncated() -> list[ir.Value]:
        given = partial.load_partial(em, tag, tl)
        diff = b.and_(b.xor(em.to_i128(t), given), partial.byte_mask128(em, tl))
        return [b.icmp_unsigned("!=", diff, ir.Constant(i128, 0))]
    # constant time: one wide compare of the (masked) difference, no early exit; the branch
    # is on the tag's length, which is public
    (bad,) = em.if_else_values(b.icmp_unsigned("==", tl, _c(16)), whole, truncated, "tag")
    with b.if_then(bad, likely=False):
        memset = em.intrinsic("llvm.memset.p0.i64", void, [ptr, i8, i64, i1])
        b.call(memset, [out, ir.Constant(i8, 0), ln, ir.Constant(i1, 0)])
        _ret(b, abi.RC_BAD_TAG)
    _ret(b, abi.RC_OK)


RECORD = "vg.record"  # the record shape's body, shared by seal_two_slice and seal_gather
RECORD_ARGS = [ptr, ptr, i64, ptr, i64, ptr, i64, ptr, i64, ptr, ptr]


def build_record(module: ir.Module, params: Params) -> None:
    """vg.record(ctx, nonce, nonce_len, aad, aad_len, p0, n0, p1, n1, out, tag) -> rc: n0
    bytes at p0 then n1 (0 or 1) at p1, any nonce and AAD.  A text the short path takes goes
    there with the byte passed by value (vg.short.enc.byte); else one stitched call takes the
    byte the same way (seal_with_byte).  No copy, no split-block step, one reduction."""
    e = Entry(module, params, RECORD, RECORD_ARGS, exported=False)
    # inlined into both callers: a call from seal_gather (9 arguments) could not be a tail
    # call (11, five on the stack), and the frame it needs cost 2-4 ns at 16-127 B
    e.f.fn.attributes.add("alwaysinline")
    em, b = e.em, e.b
    ctx, nonce, nl, aad, al, p0, n0, p1, n1, out, tag = e.f.args
    e.check_lengths(nl, None, al)
    total = b.add(n0, n1)
    e.guard(b.or_(b.icmp_unsigned(">", n0, _c(MAX_PLAINTEXT)),
                  b.icmp_unsigned(">", total, _c(MAX_PLAINTEXT))), abi.RC_TEXT_TOO_LONG)
    stitched = b.append_basic_block("stitched")
    with b.if_then(short.fits(b, nl, al, total, short.medium_blocks(params))):
        (byte,) = em.if_else_values(b.icmp_unsigned("==", n1, _c(1)),
                                    lambda: [em.load_int(p1, 0, i8)],
                                    lambda: [ir.Constant(i8, 0)], "sbyte")
        t = short.call_record(e.f, [ctx, nonce, aad, al, p0, out, n0, byte, n1], total,
                              stitched)
        em.store(t, tag, 0)
        _ret(b, abi.RC_OK)
    b.branch(stitched)
    b.position_at_end(stitched)
    io, ej0 = e.start(ctx, nonce, nl, aad, al)
    e.length_block(io, total, al)
    seal_with_byte(e, ctx, io, p0, n0, p1, n1, out, e.pub_ctr(nl))
    em.store(e.tag(io, ej0), tag, 0)
    _ret(b, abi.RC_OK)


def align_frame(f: Fn) -> None:
    """Realign the function's frame to 64 bytes, so the stitched function it calls starts at
    the same stack alignment whatever the caller's: that function spills zmm/ymm values
    without realigning its own frame, and on vaes_avx512 its reloads cost 20% more at 1-2 KiB
    when they straddle cache lines, i.e. for every other 16-byte stack offset of the caller
    (design notes, "Records through vg.record").  Masked (AVX-512) backends only: on vaes_avx2
    the realigned frame moved the stitched loop's reloads into 4K aliasing with the output at
    the driver's stack offset (two-slice 4 and 16 KiB 2.0-2.2x)."""
    if f.params.backend.masked:
        f.fn.attributes.alignstack = 64


def build_two_slice(module: ir.Module, params: Params) -> None:
    """seal_two_slice: the TLS record shape, a piece (any length) then at most one byte, 96-bit
    nonce, AAD <= 16 bytes; the body is vg.record."""
    e = Entry(module, params, "seal_two_slice", RECORD_ARGS)
    align_frame(e.f)
    b = e.b
    ctx, nonce, nl, aad, al, p0, n0, p1, n1, out, tag = e.f.args
    shape = b.and_(b.and_(b.icmp_unsigned("==", nl, _c(12)), b.icmp_unsigned("<=", al, _c(16))),
                   b.icmp_unsigned("<=", n1, _c(1)))
    e.guard(b.not_(shape), abi.RC_SHAPE)
    b.ret(e.call(RECORD, list(e.f.args)))


# Up to this many bytes of text, a byte that completes a block split between the pieces
# ((n0 + 1) % 16 == 0) is cheaper copied, see seal_with_byte: with 32-byte moves (AVX), else
# below 256 bytes (twice the moves; measured on Zen 4, design notes).
COPY_WHOLE_UPTO = 1024
COPY_WHOLE_UPTO_SSE = 255


def copy_whole_upto(params: Params) -> int:
    """The largest text seal_with_byte copies (0: never; the masked end takes the byte at no
    extra cost)."""
    be = params.backend
    if be.masked:
        return 0
    return COPY_WHOLE_UPTO if be.vex else COPY_WHOLE_UPTO_SSE


def seal_with_byte(e: Entry, ctx, io, p0, n0, p1, n1, out, pub) -> None:
    """n0 bytes at p0, then n1 (0 or 1) bytes at p1, through one stitched call.

    When the byte completes a block ((n0 + 1) % 16 == 0) and the text is at most
    copy_whole_upto bytes, the piece is copied into the output, the byte after it, and the
    whole blocks are sealed there in place: the stitched call's partial block (15 bytes read
    without touching a byte past them, then the byte) costs more than the copy at these sizes
    (design notes, "Records through the short path")."""
    em, b = e.em, e.b
    total = b.add(n0, n1)
    upto = copy_whole_upto(e.f.params)
    if not upto:
        _stitched_with_byte(e, ctx, io, p0, n0, p1, n1, out, pub)
        return
    whole = b.and_(b.and_(b.icmp_unsigned("==", n1, _c(1)),
                          b.icmp_unsigned("==", b.and_(total, _c(15)), _c(0))),
                   b.and_(b.icmp_unsigned(">=", n0, _c(64)),
                          b.icmp_unsigned("<=", total, _c(upto))))

    def copied():
        byte = em.load_int(p1, 0, i8)  # first: p1 may already be at its place, out + n0
        copy_from_64(em, p0, n0, out)
        em.store_int(byte, out, n0)
        e.call("vg.bulk.enc", [ctx, io, out, out, total, ir.Constant(i1, 1), pub])
        return []

    def stitched():
        _stitched_with_byte(e, ctx, io, p0, n0, p1, n1, out, pub)
        return []
    em.if_else_values(whole, copied, stitched, "rec")


def _stitched_with_byte(e: Entry, ctx, io, p0, n0, p1, n1, out, pub) -> None:
    em, b, f, module = e.em, e.b, e.f, e.module
    true = ir.Constant(i1, 1)

    def with_byte(nr):
        def go():
            byte = em.load_int(p1, 0, i8)
            b.call(module.globals[f"vg.bulk.enc1.{nr}"], [ctx, io, p0, out, n0, true, pub, byte])
            return []

        def without():
            b.call(module.globals[f"vg.bulk.enc.{nr}"], [ctx, io, p0, out, n0, true, pub])
            return []
        em.if_else_values(b.icmp_unsigned("==", n1, _c(1)), go, without, f"ts{nr}")
    f.dispatch_nr(ctx, with_byte)


def build_inner(module: ir.Module, params: Params) -> None:
    """ctr32, ghash and encrypt_blocks: the bulk functions with memory-order state.  The
    counter block is the caller's, public like a nonce (vgkernels.abi): its low word is the bulk
    functions' public copy of the counter."""
    p = params
    false = ir.Constant(i1, 0)

    def pub(f: Fn, counter: ir.Value) -> ir.Value:
        return f.b.zext(f.b.bswap(f.em.load_int(counter, 12, i32)), i64)

    f = Fn(module, p, f"{p.prefix}_ctr32", i32, [ptr, ptr, ptr, ptr, i64], exported=True)
    ctx, counter, inp, out, nblk = f.args
    f.fail_closed(ctx)
    io = f.alloca_block(3)
    f.em.store(f.em.bswap_lanes(f.em.load(counter)), io, 16)
    f.b.call(module.globals["vg.bulk.ctr"], [ctx, io, inp, out, f.b.shl(nblk, _c(4)), false,
                                             pub(f, counter)])
    f.em.store(f.em.bswap_lanes(f.em.load(io, 16)), counter)
    _ret(f.b, abi.RC_OK)

    f = Fn(module, p, f"{p.prefix}_ghash", i32, [ptr, ptr, ptr, i64], exported=True)
    ctx, y, blocks, nblk = f.args
    f.fail_closed(ctx)
    io = f.alloca_block(3)
    f.em.store(f.em.bswap_lanes(f.em.load(y)), io, 0)
    f.b.call(module.globals["vg.bulk.hash"], [ctx, io, blocks, blocks, f.b.shl(nblk, _c(4)),
                                              false])
    f.em.store(f.em.bswap_lanes(f.em.load(io, 0)), y)
    _ret(f.b, abi.RC_OK)

    f = Fn(module, p, f"{p.prefix}_encrypt_blocks", i32, [ptr, ptr, ptr, ptr, ptr, i64],
           exported=True)
    ctx, y, counter, inp, out, nbytes = f.args
    f.fail_closed(ctx)
    io = f.alloca_block(3)
    f.em.store(f.em.bswap_lanes(f.em.load(y)), io, 0)
    f.em.store(f.em.bswap_lanes(f.em.load(counter)), io, 16)
    f.b.call(module.globals["vg.bulk.enc"], [ctx, io, inp, out, nbytes, false, pub(f, counter)])
    f.em.store(f.em.bswap_lanes(f.em.load(io, 0)), y)
    f.em.store(f.em.bswap_lanes(f.em.load(io, 16)), counter)
    _ret(f.b, abi.RC_OK)


__all__ = ["RECORD", "Entry", "align_frame", "build_helpers", "build_inner", "build_open_out",
           "build_record", "build_seal_out", "build_two_slice", "seal_with_byte"]
