"""seal_gather: the pieces are read where they are.

Whole blocks of a piece go straight through the stitched loop (out of place).  A block split
between pieces is assembled in a register (the *carry*, ``cn`` bytes of it filled), encrypted
and hashed on its own.  The last piece's own end and the length block finish inside the stitched
function when no split block is pending; otherwise ``finish_split_block`` does them here.
One piece, or a piece then at most one byte (the TLS record shape), goes to vg.record first
(``entries.build_record``, the body of seal_two_slice too); on the unmasked backends two other
pieces of at most COPY_UPTO bytes are copied into the output and sealed there
(vg.gather.copy).
"""

from __future__ import annotations

from types import SimpleNamespace

from llvmlite import ir

from .. import abi
from ..abi import MAX_PLAINTEXT
from ..ir import ctr as ctrs
from ..ir import partial
from ..ir.core import Emitter, i1, i64, i128, ptr
from . import short
from .common import Params, copy_from_64, libc_copies
from .entries import RECORD, Entry, align_frame, seal_with_byte
from .modes import ENC

ARGS = [ptr, ptr, i64, ptr, i64, ptr, i64, ptr, ptr]
GENERAL = "vg.gather.general"
RECORD_PIECES = "vg.record.pieces"
COPY = "vg.gather.copy"
# Records up to this many bytes take vg.record.pieces; longer ones the general function (its
# own two-slice step), where the frame, and so the 4K aliasing of the stitched loop's stack
# reloads against the output (design notes, "Known effect"), is main's: through
# vg.record.pieces vaes_avx2 measured 1.9x at 4 and 16 KiB at the driver's stack offset
# (fine at 14 of 16 others), and the saved dispatch is under 0.2% there.
RECORD_UPTO = 2048
# Up to this many bytes of text, two pieces (other than the record shape) are copied into the
# output and sealed there by one call (vg.gather.copy), on the unmasked backends: a piece's
# own stitched call or split block costs more than the copy at these sizes.  vaes_avx2
# measured the copy 13% slower than the pieces where they lie at 2000 B, 3-5% faster at 1000.
COPY_UPTO = 1024
# Where the kernels copy through libc (`libc_copies`), pieces from this many bytes.  Same run,
# Zen 5, aesni_pclmul: gather 1+rest and 16+rest 143-1000 B 0.93-0.99x, 32-127 B 0.98-1.00x;
# every piece through libc cost 1.5-7% at 64 B.
LIBC_FROM = 128

# On vaes_avx2 a record (a piece then one byte) whose text is a multiple of 128 bytes within
# these bounds is copied too: the stitched call with the byte measured 1-2% behind copy +
# in-place seal there (1152, 1280, 1536, 4096 B; ahead at other lengths; vg.record itself
# copies a byte completing a block up to 1024 B), the copy 3-6% ahead of it, but for 2048 B
# (+3%).  Not on the xmm backends: aesni_pclmul measured it 5-11% slower, aesni_pclmul_avx
# -2..+4%.
RECORD_COPY = (1152, 4096)


def record_copy(params: Params) -> tuple[int, int] | None:
    """The bounds of RECORD_COPY where the backend takes it, else None."""
    return RECORD_COPY if copy_upto(params) and params.backend.width >= 2 else None


def copy_upto(params: Params) -> int:
    """The largest text of two pieces seal_gather copies before sealing in place (0: never;
    the masked backends' gather was already level with copy + seal)."""
    return 0 if params.backend.masked else COPY_UPTO


def _c(x: int) -> ir.Constant:
    return ir.Constant(i64, x)


def copy_piece(e: Entry, p: ir.Value, n: ir.Value, dst: ir.Value) -> None:
    """n bytes from p to dst as memcpy does them: 64 bytes a step from 64 on (the last step
    overlapping), else two overlapping moves of the largest power of two <= n; no branch per
    chunk, no byte assembled in a register.  Loads before stores: p == dst copies onto itself."""
    em, b = e.em, e.b

    def load(size: int, off: ir.Value) -> ir.Value:
        return em.load(p, off, size // 16) if size >= 16 else \
            em.load_int(p, off, ir.IntType(8 * size))

    def two(size: int):
        def move():
            tail = b.sub(n, _c(size))
            lo, hi = load(size, _c(0)), load(size, tail)
            em.store_int(lo, dst, 0)
            em.store_int(hi, dst, tail)
            return []
        return move

    def one_byte():
        em.store_int(load(1, _c(0)), dst, 0)
        return []

    def below(size: int):  # n < 2 * size
        if size == 1:
            return lambda: em.if_else_values(b.icmp_unsigned("!=", n, _c(0)), one_byte,
                                             lambda: [], "cp1")
        return lambda: em.if_else_values(b.icmp_unsigned(">=", n, _c(size)), two(size),
                                         below(size // 2), f"cp{size}")

    def own():
        copy_from_64(em, p, n, dst)
        return []

    def libc():
        em.memmove(dst, p, n)
        return []

    def big():
        if not libc_copies(e.f.params.backend):
            return own()
        return em.if_else_values(b.icmp_unsigned(">=", n, _c(LIBC_FROM)), libc, own, "cplibc")
    em.if_else_values(b.icmp_unsigned(">=", n, _c(64)), big, below(32), "cp64")


def _reload(em: Emitter, base: ir.Value, off: int) -> ir.Value:
    """The i64 at base + off, read again (volatile: LLVM keeps it apart from an earlier load of
    it, so it folds into the instruction that uses it: seal_gather has no register to spare
    for a shared one without a frame)."""
    return em.load_volatile(base, off, i64, align=8)


class Gather:
    """The function under construction and the values every step reads."""

    def __init__(self, module: ir.Module, params: Params, name: str = "seal_gather",
                 exported: bool = True):
        self.params = params
        self.e = Entry(module, params, name, ARGS, exported)
        self.em, self.b, self.f = self.e.em, self.e.b, self.e.f
        (self.ctx, self.nonce, self.nl, self.aad, self.al, self.pieces, self.npieces, self.out,
         self.tag) = self.f.args
        self.count: int | None = None  # the number of pieces, if the caller checked it
        self.io: ir.Value | None = None  # set by `start`: the bulk functions' io block
        self.ej0: ir.Value | None = None

    def piece(self, k: ir.Value) -> tuple[ir.Value, ir.Value]:
        """(ptr, len) of piece k."""
        base = self.em.gep(self.pieces, self.b.shl(k, _c(4)))
        return self.em.load_int(base, 0, ptr), self.em.load_int(base, 8, i64)

    def total_length(self) -> tuple[ir.Value, ir.Value, ir.Value]:
        """(total, index of the last non-empty piece or -1, overflow): one pass over the
        pieces, refusing a piece or a running total over the GCM limit (no wrap-around)."""
        b = self.b
        with self.em.loop("sum", lambda v: b.icmp_unsigned("<", v.k, self.npieces),
                          k=_c(0), total=_c(0), last=_c(-1), over=ir.Constant(i1, 0)) as v:
            _, n = self.piece(v.k)
            t2 = b.add(v.total, n)
            v.over = b.or_(v.over, b.or_(b.icmp_unsigned(">", n, _c(MAX_PLAINTEXT)),
                                         b.icmp_unsigned(">", t2, _c(MAX_PLAINTEXT))))
            v.last = b.select(b.icmp_unsigned("!=", n, _c(0)), v.k, v.last)
            v.total = t2
            v.k = b.add(v.k, _c(1))
        return v.total, v.last, v.over

    def short_message(self, total: ir.Value) -> None:
        """A message the short path takes (public lengths: a 96-bit nonce, at most 16 bytes of
        AAD and 16 * piece_blocks of text) is copied into the output (16 bytes at a time, or in
        vg.gather.copy by copy_piece) and sealed there by one short call: the copy costs less
        than the J0, length-block and stitched set-up it avoids, so the gather does not lose to
        copy + in-place seal at these sizes.  The API refuses overlaps other than a piece
        already at its place, which copies onto itself.  (On two-slice backends one piece, or
        a piece then a byte, goes to vg.record instead.)"""
        em, b = self.em, self.b
        # vg.gather.copy takes the medium path too; the general function stays as it was
        blocks = (short.medium_blocks(self.params) if self.count
                  else short.piece_blocks(self.params.backend))
        with b.if_then(short.fits(b, self.nl, self.al, total, blocks)):
            if self.count is None:  # masked chunks, or 3+ pieces in the general function
                with em.loop("scopy", lambda v: b.icmp_unsigned("<", v.k, self.npieces),
                             k=_c(0), pos=_c(0)) as v:
                    p, n = self.piece(v.k)
                    with em.loop("schunk", lambda u: b.icmp_unsigned("<", u.off, n),
                                 off=_c(0)) as u:
                        left = b.sub(n, u.off)
                        m = b.select(b.icmp_unsigned("<", left, _c(16)), left, _c(16))
                        x = short.load_upto16(self.e.f, em.gep(p, u.off), m)
                        short.store_upto16(self.e.f, em.gep(self.out, b.add(v.pos, u.off)), m,
                                           x)
                        u.off = b.add(u.off, _c(16))
                    v.pos = b.add(v.pos, n)
                    v.k = b.add(v.k, _c(1))
            else:
                self.copy_pieces()
            t = short.call(self.e.f, ENC, [self.ctx, self.nonce, self.aad, self.al, self.out,
                                           self.out, total], blocks)
            em.store(t, self.tag, 0)
            b.ret(ir.Constant(ir.IntType(32), abi.RC_OK))

    def copy_pieces(self) -> None:
        """Every piece into the output at its place (copy_piece)."""
        b = self.b
        if self.count is not None:
            pos = _c(0)
            for k in range(self.count):
                p, n = self.piece(_c(k))
                copy_piece(self.e, p, n, self.em.gep(self.out, pos))
                pos = b.add(pos, n)
            return
        with self.em.loop("copy", lambda v: b.icmp_unsigned("<", v.k, self.npieces),
                          k=_c(0), pos=_c(0)) as v:
            p, n = self.piece(v.k)
            copy_piece(self.e, p, n, self.em.gep(self.out, v.pos))
            v.pos = b.add(v.pos, n)
            v.k = b.add(v.k, _c(1))

    def copy_message(self, total: ir.Value) -> None:
        """The pieces copied into the output and sealed there by one stitched call, as copy +
        in-place seal would, without the calls.  The copy first: its stores retire while
        vg.setup runs."""
        self.copy_pieces()
        self.start(total)
        self.e.call("vg.bulk.enc", [self.ctx, self.io, self.out, self.out, total,
                                    ir.Constant(i1, 1), self.e.pub_ctr(self.nl)])
        self.store_tag()

    def start(self, total: ir.Value) -> None:
        self.io, self.ej0 = self.e.start(self.ctx, self.nonce, self.nl, self.aad, self.al)
        self.e.length_block(self.io, total, self.al)

    def record_from_pieces(self) -> None:
        """vg.record.pieces: one piece, or a piece then at most one byte (the caller checked),
        through vg.record (inlined here)."""
        b = self.b
        one = b.icmp_unsigned("==", self.npieces, _c(1))
        p0, n0 = self.piece(_c(0))
        p1, n1 = self.em.if_else_values(b.not_(one), lambda: list(self.piece(_c(1))),
                                        lambda: [p0, _c(0)], "rec2")
        b.ret(self.e.call(RECORD, [self.ctx, self.nonce, self.nl, self.aad, self.al,
                                   p0, n0, p1, n1, self.out, self.tag]))

    def dispatch(self) -> None:
        """seal_gather itself: the record shape to vg.record.pieces (a record within
        record_copy of whole 128-byte groups and two other pieces of at most copy_upto bytes
        to vg.gather.copy, where the backend copies), the rest to the general gather, tail
        calls with the entry's own arguments (no frame here: each path runs at the stack depth
        it would have as an entry of its own).  A length used twice is read twice (_reload):
        one more register would cost this function a frame."""
        b = self.b
        args = list(self.f.args)

        def go(name: str) -> None:
            b.ret(b.call(self.e.module.globals[name], args, tail="musttail"))
        upto = copy_upto(self.params)
        with b.if_then(b.icmp_unsigned("==", self.npieces, _c(2))):
            n0, n1 = self.piece(_c(0))[1], self.piece(_c(1))[1]
            rc = record_copy(self.params)

            def whole_groups() -> None:  # n0 + 1 a multiple of 128: to vg.gather.copy
                n0_again = _reload(self.em, self.pieces, 8)
                with b.if_then(b.icmp_unsigned("==", b.and_(n0_again, _c(127)), _c(127))):
                    go(COPY)
            with b.if_then(b.icmp_unsigned("<=", n1, _c(1))):
                with b.if_then(b.icmp_unsigned("<=", n0, _c(RECORD_UPTO - 1))):
                    if rc:
                        with b.if_then(b.icmp_unsigned(">=", n0, _c(rc[0] - 1))):
                            whole_groups()
                    go(RECORD_PIECES)
                if rc:
                    with b.if_then(b.icmp_unsigned("<=", n0, _c(rc[1] - 1))):
                        whole_groups()
                go(GENERAL)
            if upto:  # the sum may wrap: vg.gather.copy checks n0 and n1 on their own
                n1_again = _reload(self.em, self.pieces, 24)
                with b.if_then(b.icmp_unsigned("<=", b.add(n0, n1_again), _c(upto))):
                    go(COPY)
            go(GENERAL)
        one = b.and_(b.icmp_unsigned("==", self.npieces, _c(1)),
                     b.icmp_unsigned("<=", self.piece(_c(0))[1], _c(RECORD_UPTO)))
        with b.if_then(one):
            go(RECORD_PIECES)
        go(GENERAL)

    def two_slice_shortcut(self) -> None:
        """A piece then at most one byte (a TLS record longer than RECORD_UPTO) is one
        stitched call, whatever the lengths."""
        b = self.b
        with b.if_then(b.icmp_unsigned("==", self.npieces, _c(2))):
            (p0, n0), (p1, n1) = self.piece(_c(0)), self.piece(_c(1))
            with b.if_then(b.icmp_unsigned("<=", n1, _c(1))):
                seal_with_byte(self.e, self.ctx, self.io, p0, n0, p1, n1, self.out,
                               self.e.pub_ctr(self.nl))
                self.store_tag()

    def top_up(self, s: SimpleNamespace) -> None:
        """Fill the split block from the head of the piece; a full one is sealed alone."""
        em, b = self.em, self.b

        def fill(vals):
            carry, cn, p, n, o = vals
            room = b.sub(_c(16), cn)
            take = b.select(b.icmp_unsigned("<", n, room), n, room)
            bits = partial.load_partial(em, p, take)
            carry = b.or_(carry, b.shl(bits, b.zext(b.shl(cn, _c(3)), i128)))
            cn, p, n = b.add(cn, take), em.gep(p, take), b.sub(n, take)
            carry, cn, o = em.when(b.icmp_unsigned("==", cn, _c(16)), self.seal_block,
                                   [carry, cn, o], "blk")
            return [carry, cn, p, n, o]

        start_top = b.and_(b.icmp_unsigned("!=", s.cn, _c(0)), b.icmp_unsigned("!=", s.n, _c(0)))
        s.carry, s.cn, s.p, s.n, s.o = em.when(start_top, fill,
                                               [s.carry, s.cn, s.p, s.n, s.o], "top")

    def seal_block(self, vals: list[ir.Value]) -> list[ir.Value]:
        """The assembled block: keystream, store, GHASH, next counter (through io)."""
        em, b, e, io = self.em, self.b, self.e, self.io
        carry, cn, o = vals
        c = em.load(io, 16)
        ks = e.call("vg.aes1", [self.ctx, em.bswap_lanes(c)])
        blk = b.xor(em.from_i128(carry), ks)
        em.store(blk, self.out, o)
        em.store(e.call("vg.ghash1", [self.ctx, em.load(io, 0), blk]), io, 0)
        em.store(ctrs.add(em, c, 1), io, 16)
        return [ir.Constant(i128, 0), _c(0), b.add(o, _c(16))]

    def pass_through(self, s: SimpleNamespace, last: ir.Value) -> None:
        """The piece's whole blocks through the stitched function; the last piece with no
        split block pending also takes its partial block and the length block there."""
        em, b, e = self.em, self.b, self.e
        true, false = ir.Constant(i1, 1), ir.Constant(i1, 0)
        finish_here = b.and_(b.icmp_unsigned("==", s.k, last), b.icmp_unsigned("==", s.cn, _c(0)))

        def finish(vals):
            p, n, o, _ = vals
            e.call("vg.bulk.enc", [self.ctx, self.io, p, em.gep(self.out, o), n, true,
                                   e.pub_ctr(self.nl, o)])
            return [p, _c(0), b.add(o, n), true]

        def whole(vals):
            p, n, o, d = vals
            wb = b.and_(n, _c(~15))

            def go(vv):
                p, n, o = vv
                e.call("vg.bulk.enc", [self.ctx, self.io, p, em.gep(self.out, o), wb, false,
                                       e.pub_ctr(self.nl, o)])
                return [em.gep(p, wb), b.sub(n, wb), b.add(o, wb)]
            p, n, o = em.when(b.icmp_unsigned("!=", wb, _c(0)), go, [p, n, o], "whole")
            return [p, n, o, d]
        vals = [s.p, s.n, s.o, s.done]
        s.p, s.n, s.o, s.done = em.if_else_values(finish_here, lambda: finish(vals),
                                                  lambda: whole(vals), "fin")

    def stash(self, s: SimpleNamespace) -> None:
        """What is left of the piece (under a block) starts the next split block."""
        em, b = self.em, self.b
        p, n = s.p, s.n
        s.carry, s.cn = em.when(b.icmp_unsigned("!=", n, _c(0)),
                                lambda vals: [partial.load_partial(em, p, n), n],
                                [s.carry, s.cn], "stash")

    def pieces_loop(self, last: ir.Value) -> SimpleNamespace:
        b = self.b
        with self.em.loop("pieces", lambda v: b.icmp_unsigned("<", v.k, self.npieces),
                          k=_c(0), carry=ir.Constant(i128, 0), cn=_c(0), o=_c(0),
                          done=ir.Constant(i1, 0)) as v:
            p, n = self.piece(v.k)
            s = SimpleNamespace(k=v.k, carry=v.carry, cn=v.cn, p=p, n=n, o=v.o, done=v.done)
            self.top_up(s)
            self.pass_through(s, last)
            self.stash(s)
            v.k, v.carry, v.cn, v.o, v.done = b.add(v.k, _c(1)), s.carry, s.cn, s.o, s.done
        return v

    def finish_split_block(self, v: SimpleNamespace) -> None:
        """Unless the stitched function finished: a partial block assembled from several pieces
        (if any), then the length block, one reduction."""
        em, b, f, ctx, io = self.em, self.b, self.f, self.ctx, self.io
        carry, cn, o = v.carry, v.cn, v.o

        def finish(vals):
            c = em.load(io, 16)
            y = em.load(io, 0)
            ln = em.load(io, 32)

            def with_partial():
                ks = self.e.call("vg.aes1", [ctx, em.bswap_lanes(c)])
                blk = em.to_i128(b.xor(em.from_i128(carry), ks))
                partial.store_partial(em, em.gep(self.out, o), cn, blk)
                blk = em.from_i128(b.and_(blk, partial.byte_mask128(em, cn)))
                t = f.gh.accumulate(None, em.xor(y, em.bswap_lanes(blk)), f.power(ctx, 2, 1))
                t = f.gh.accumulate(t, ln, f.power(ctx, 1, 1))
                return [f.gh.reduce(t)]
            (y2,) = em.if_else_values(
                b.icmp_unsigned("!=", cn, _c(0)), with_partial,
                lambda: [f.gh.mul(em.xor(y, ln), f.power(ctx, 1, 1))], "tailp")
            em.store(y2, io, 0)
            return []
        em.when(b.not_(v.done), finish, [], "tail")  # IR labels kept from the first version

    def store_tag(self) -> None:
        self.em.store(self.e.tag(self.io, self.ej0), self.tag, 0)
        self.b.ret(ir.Constant(ir.IntType(32), abi.RC_OK))


def build_general(g: Gather) -> None:
    """Any pieces: the short path after a copy, else the pieces where they lie."""
    total, last, over = g.total_length()
    g.e.check_lengths(g.nl, None, g.al)
    g.e.guard(over, abi.RC_TEXT_TOO_LONG)
    g.short_message(total)
    g.start(total)
    if g.params.backend.two_slice:
        g.two_slice_shortcut()
    g.finish_split_block(g.pieces_loop(last))
    g.store_tag()


def build_copy(g: Gather) -> None:
    """vg.gather.copy: two pieces whose lengths add up to at most copy_upto bytes, or a record
    of whole groups within record_copy (seal_gather checked), through the short path or
    copied and sealed in place; a sum that wrapped around goes on to the general function
    (which refuses it).  Its own function:
    through the general one (its frame, register saves and loops over the pieces) 16 + rest
    measured 3-10% slower at 32-1000 B, and the general function stays main's (its frame
    decides the 4K aliasing of the stitched loop's reloads)."""
    b = g.b
    g.count = 2
    upto = copy_upto(g.params)
    n0, n1 = g.piece(_c(0))[1], g.piece(_c(1))[1]
    total = b.add(n0, n1)  # checked by seal_gather, unless it wrapped around
    rc = record_copy(g.params)
    with b.if_then(b.or_(b.icmp_unsigned(">", n0, _c(max(upto, rc[1] if rc else 0))),
                         b.icmp_unsigned(">", n1, _c(upto)))):
        b.ret(b.call(g.e.module.globals[GENERAL], list(g.f.args), tail="musttail"))
    g.e.check_lengths(g.nl, None, g.al)
    g.short_message(total)
    g.copy_message(total)


def build_gather(module: ir.Module, params: Params) -> None:
    if not params.backend.two_slice:
        build_general(Gather(module, params))
        return
    general = Gather(module, params, GENERAL, exported=False)
    general.f.fn.attributes.add("noinline")
    align_frame(general.f)
    build_general(general)
    if copy_upto(params):
        cp = Gather(module, params, COPY, exported=False)
        cp.f.fn.attributes.add("noinline")
        build_copy(cp)
    rec = Gather(module, params, RECORD_PIECES, exported=False)
    rec.f.fn.attributes.add("noinline")
    align_frame(rec.f)
    rec.record_from_pieces()
    Gather(module, params).dispatch()


__all__ = ["build_gather"]
