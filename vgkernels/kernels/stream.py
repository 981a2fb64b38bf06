"""Streaming AEAD: init, AAD, encrypt/decrypt in chunks of any size, finish.

The state's first 48 bytes are the bulk functions' io block {Y, ctr, len}, so whole blocks of
every chunk go through the same stitched loop as one-shot calls; only a block split between
chunks is buffered (its keystream and its bytes for GHASH), byte by byte.

State (abi.STREAM_SIZE bytes): 0 Y | 16 ctr | 32 1 if the nonce is 96 bits (public: the
stream never uses the io block's length slot) | 48 E(J0) | 64 keystream of the
open block | 80 bytes of the open block (zero padded) | 96 AAD length | 104 text length |
112 bytes used in the open block | 120 phase (0 AAD, 1 text, 2 finished).
"""

from __future__ import annotations

from llvmlite import ir

from .. import abi
from ..abi import MAX_AAD, MAX_PLAINTEXT
from ..ir import ctr as ctrs
from ..ir.core import i1, i8, i32, i64, ptr, zero
from .common import Fn, Params

Y, CTR, NONCE96, EJ0, KS, BLK = 0, 16, 32, 48, 64, 80
AAD_LEN, TEXT_LEN, USED, PHASE = 96, 104, 112, 120


def _c(x: int) -> ir.Constant:
    return ir.Constant(i64, x)


class _S:
    def __init__(self, module: ir.Module, params: Params, op: str, args: list[ir.Type]):
        self.module = module
        self.f = Fn(module, params, f"{params.prefix}_{op}", i32, args, exported=True)
        self.em, self.b = self.f.em, self.f.b
        self.f.fail_closed(self.f.args[0])  # every streaming entry takes the key context first

    def get(self, st, off):
        return self.em.load_int(st, off, i64)

    def put(self, st, off, v):
        self.em.store_int(v, st, off)

    def ret_if(self, cond, code):
        with self.b.if_then(cond, likely=False):
            self.b.ret(ir.Constant(i32, code))

    def call(self, name, args):
        return self.b.call(self.module.globals[name], args)

    def flush_block(self, ctx, st):
        """GHASH the open block (zero padded) and start a new one."""
        em = self.em
        em.store(self.call("vg.ghash1", [ctx, em.load(st, Y), em.load(st, BLK)]), st, Y)
        em.store(zero(1), st, BLK)
        self.put(st, USED, _c(0))

    def fill(self, st, src, dst, count, used, enc: bool | None):
        """Bytes [0, count) of src into the open block at `used`: XOR with the keystream into
        dst when enc is not None (GHASH takes the ciphertext side), else AAD."""
        b, em = self.b, self.em

        with em.loop("fill", lambda v: b.icmp_unsigned("<", v.i, count), i=_c(0)) as v:
            x = em.load_int(src, v.i, i8)
            pos = b.add(used, v.i)
            if enc is None:
                em.store_int(x, st, b.add(pos, _c(BLK)))
            else:
                c = b.xor(x, em.load_int(st, b.add(pos, _c(KS)), i8))
                em.store_int(c, dst, v.i)
                em.store_int(c if enc else x, st, b.add(pos, _c(BLK)))
            v.i = b.add(v.i, _c(1))

def build_stream(module: ir.Module, params: Params) -> None:
    # init
    s = _S(module, params, "stream_init", [ptr, ptr, ptr, i64])
    ctx, st, nonce, nl = s.f.args
    s.ret_if(s.b.icmp_unsigned("==", nl, _c(0)), abi.RC_EMPTY_NONCE)
    for off in range(0, 128, 16):
        s.em.store(zero(1), st, off)
    s.em.store(s.call("vg.setup", [ctx, nonce, nl, st]), st, EJ0)
    s.put(st, NONCE96, s.b.zext(s.b.icmp_unsigned("==", nl, _c(12)), i64))
    s.b.ret(ir.Constant(i32, abi.RC_OK))

    # aad
    s = _S(module, params, "stream_aad", [ptr, ptr, ptr, i64])
    ctx, st, aad, n = s.f.args
    b, em = s.b, s.em
    s.ret_if(b.icmp_unsigned("!=", s.get(st, PHASE), _c(0)), abi.RC_ORDER)
    total = b.add(s.get(st, AAD_LEN), n)
    s.ret_if(b.or_(b.icmp_unsigned(">", n, _c(MAX_AAD)), b.icmp_unsigned(">", total, _c(MAX_AAD))),
             abi.RC_AAD_TOO_LONG)
    s.put(st, AAD_LEN, total)
    _absorb(s, ctx, st, aad, aad, n, None)
    b.ret(ir.Constant(i32, abi.RC_OK))

    # encrypt / decrypt
    for op, enc in (("stream_encrypt", True), ("stream_decrypt", False)):
        s = _S(module, params, op, [ptr, ptr, ptr, ptr, i64])
        ctx, st, inp, out, n = s.f.args
        b, em = s.b, s.em
        phase = s.get(st, PHASE)
        s.ret_if(b.icmp_unsigned("==", phase, _c(2)), abi.RC_ORDER)
        total = b.add(s.get(st, TEXT_LEN), n)
        s.ret_if(b.or_(b.icmp_unsigned(">", n, _c(MAX_PLAINTEXT)),
                       b.icmp_unsigned(">", total, _c(MAX_PLAINTEXT))), abi.RC_TEXT_TOO_LONG)
        with b.if_then(b.icmp_unsigned("==", phase, _c(0))):
            with b.if_then(b.icmp_unsigned("!=", s.get(st, USED), _c(0))):
                s.flush_block(ctx, st)
            s.put(st, PHASE, _c(1))
        s.put(st, TEXT_LEN, total)
        _absorb(s, ctx, st, inp, out, n, enc)
        b.ret(ir.Constant(i32, abi.RC_OK))

    # finish
    s = _S(module, params, "stream_finish", [ptr, ptr, ptr])
    ctx, st, tag = s.f.args
    b, em, f = s.b, s.em, s.f
    s.ret_if(b.icmp_unsigned("==", s.get(st, PHASE), _c(2)), abi.RC_ORDER)
    with b.if_then(b.icmp_unsigned("!=", s.get(st, USED), _c(0))):
        s.flush_block(ctx, st)
    ln = b.insert_element(zero(1), b.shl(s.get(st, TEXT_LEN), _c(3)), ir.Constant(i32, 0))
    ln = b.insert_element(ln, b.shl(s.get(st, AAD_LEN), _c(3)), ir.Constant(i32, 1))
    y = f.gh.mul(em.xor(em.load(st, Y), ln), f.power(ctx, 1, 1))
    em.store(em.xor(em.bswap_lanes(y), em.load(st, EJ0)), tag, 0)
    s.put(st, PHASE, _c(2))
    b.ret(ir.Constant(i32, abi.RC_OK))


def _absorb(s: _S, ctx, st, src, dst, n, enc: bool | None) -> None:
    """Top up the open block, pass whole blocks to the bulk function, keep the rest open."""
    b, em = s.b, s.em
    used = s.get(st, USED)

    def top_up(v):
        src, dst, n = v
        room = b.sub(_c(16), used)
        take = b.select(b.icmp_unsigned("<", n, room), n, room)
        s.fill(st, src, dst, take, used, enc)
        s.put(st, USED, b.add(used, take))
        with b.if_then(b.icmp_unsigned("==", b.add(used, take), _c(16))):
            s.flush_block(ctx, st)
        return [em.gep(src, take), em.gep(dst, take), b.sub(n, take)]
    src, dst, n = em.when(b.icmp_unsigned("!=", used, _c(0)), top_up, [src, dst, n], "top")
    whole = b.and_(n, _c(~15))
    mode = "hash" if enc is None else ("enc" if enc else "dec")
    with b.if_then(b.icmp_unsigned("!=", whole, _c(0))):
        args = [ctx, st, src, dst, whole, ir.Constant(i1, 0)]
        if enc is not None:  # the public copy of the counter (see bulk): no block is open here
            done = b.sub(s.get(st, TEXT_LEN), n)
            args.append(b.select(b.icmp_unsigned("!=", s.get(st, NONCE96), _c(0)),
                                 b.add(_c(2), b.lshr(done, _c(4))), _c(-1)))
        s.call(f"vg.bulk.{mode}", args)
    rest = b.and_(n, _c(15))
    with b.if_then(b.icmp_unsigned("!=", rest, _c(0))):
        if enc is not None:
            c = em.load(st, CTR)
            em.store(s.call("vg.aes1", [ctx, em.bswap_lanes(c)]), st, KS)
            em.store(ctrs.add(em, c, 1), st, CTR)
        s.fill(st, em.gep(src, whole), em.gep(dst, whole), rest, _c(0), enc)
        s.put(st, USED, rest)
