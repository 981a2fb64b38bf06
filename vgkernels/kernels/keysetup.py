"""Key setup ("prepared" keys): FIPS-197 round keys and the table of H powers.

The first-round table (`abi.CTX_ROUND1`, where the backend's stitched loops read it): 256
blocks, entry v the difference the last byte v makes to a block's first round.

H = E_K(0^128) is kept reflected and divided by x (see ir/ghash.py); H^(k+1) = H^k * H with the
backend's own multiply, stored highest first so that a vector of W descending powers, or a
partial one running into the zero padding after H^1, is one load.
"""

from __future__ import annotations

from llvmlite import ir

from .. import abi
from ..ir import aes
from ..ir.core import bvec, i8, i32, i64, ptr, zero
from .common import Fn, Params


def build_key_init(module: ir.Module, params: Params) -> ir.Function:
    f = Fn(module, params, f"{params.prefix}_key_init", i32, [ptr, ptr, i64], exported=True)
    em, b = f.em, f.b
    ctx, key, key_len = f.args
    # invalid until the very end: a failed or interrupted setup leaves a context that fails
    # closed, whatever it held before
    em.store_int(ir.Constant(i32, 0), ctx, abi.CTX_MAGIC)
    em.store_int(ir.Constant(i32, 0), ctx, abi.CTX_NROUNDS)
    bad = b.append_basic_block("bad_len")
    join = b.append_basic_block("powers")
    sw = b.switch(key_len, bad)
    arms = []
    for nk in (4, 6, 8):
        bb = b.append_basic_block(f"nk{nk}")
        sw.add_case(ir.Constant(i64, 4 * nk), bb)
        b.position_at_end(bb)
        rks = aes.key_expansion(em, f.prims, key, nk)
        for r, k in enumerate(rks):
            em.store(k, ctx, abi.CTX_ROUND_KEYS + 16 * r)
        em.store_int(ir.Constant(i32, nk + 6), ctx, abi.CTX_NROUNDS)
        em.store_int(ir.Constant(i32, 4 * nk), ctx, abi.CTX_KEY_LEN)
        (h,) = aes.aes_encrypt(em, f.prims, [zero(1)], rks)
        arms.append((h, b.block))
        b.branch(join)
    b.position_at_end(bad)
    b.ret(ir.Constant(i32, abi.KEY_INIT_BAD_LENGTH))
    b.position_at_end(join)
    h = b.phi(arms[0][0].type, name="h")
    for v, bb in arms:
        h.add_incoming(v, bb)
    k1 = f.gh.div_x(em.bswap_lanes(h))
    em.store(k1, ctx, abi.power_offset(1))
    for j in range(abi.CTX_POWER_PAD):
        em.store(zero(1), ctx, abi.power_offset(1) + 16 * (j + 1))

    # H^k for k = 2..CTX_NPOW, each one multiply from the last
    last = ir.Constant(i64, abi.CTX_NPOW)
    with em.loop("pow", lambda v: b.icmp_unsigned("<=", v.k, last),
                 k=ir.Constant(i64, 2), prev=k1) as v:
        v.prev = f.gh.mul(v.prev, k1)
        em.store(v.prev, ctx, b.sub(ir.Constant(i64, abi.CTX_POWERS + 16 * abi.CTX_NPOW),
                                    b.shl(v.k, ir.Constant(i64, 4))))
        v.k = b.add(v.k, ir.Constant(i64, 1))
    if params.backend.first_round:
        first_round_table(f, ctx)
    if params.backend.masked:
        broadcast_powers(f, ctx)
    em.store_int(ir.Constant(i32, abi.CTX_MAGIC_VALUE), ctx, abi.CTX_MAGIC)
    b.ret(ir.Constant(i32, abi.RC_OK))
    return f.fn


def first_round_table(f: Fn, ctx: ir.Value) -> None:
    """Entry v = AESENC(K0 ^ v*e15, 0) ^ AESENC(K0, 0) for v = 0..255 (`abi.CTX_ROUND1`), W
    entries per vector (the backend's width): the entries are independent, so one wide AES
    instruction does W of them.  key_init through ctypes, Zen 4: vaes_avx512 806 ns without
    the table, 945 with an xmm entry per iteration, 860-895 with four; vaes_avx2 980 -> 897
    and aesni_pclmul_avx 967 -> 929 (the byte add replaced an insert from a general register)."""
    em, b, w = f.em, f.b, f.params.backend.width
    k0 = em.broadcast(em.load(ctx, abi.CTX_ROUND_KEYS), w)
    at0 = f.prims.aesenc(k0, zero(w))
    c = lambda x: ir.Constant(i64, x)  # noqa: E731

    def last_bytes(lane_value) -> ir.Constant:  # byte 15 of lane l: lane_value(l), others 0
        return ir.Constant(bvec(w), [ir.Constant(i8, lane_value(k // 16) if k % 16 == 15 else 0)
                                     for k in range(16 * w)])
    with em.loop("round1", lambda v: b.icmp_unsigned("<", v.v, c(256)), v=c(0),
                 last=last_bytes(lambda lane: lane)) as v:
        t = em.xor(f.prims.aesenc(em.xor(k0, b.bitcast(v.last, k0.type)), zero(w)), at0)
        em.store(t, ctx, b.add(c(abi.CTX_ROUND1), b.shl(v.v, c(4))))
        v.v, v.last = b.add(v.v, c(w)), b.add(v.last, last_bytes(lambda lane: w))


def broadcast_powers(f: Fn, ctx: ir.Value) -> None:
    """H^4, H^8, .., H^(4 * CTX_NBCAST) in four lanes, and their half-sums (`abi.CTX_BCAST`)."""
    em = f.em
    for k in range(1, abi.CTX_NBCAST + 1):
        h = em.broadcast(em.load(ctx, abi.power_offset(4 * k)), 4)
        em.store(h, ctx, abi.bcast_offset(4 * k))
        em.store(f.gh.fold_halves(h), ctx, abi.bcast_offset(4 * k, folded=True))
