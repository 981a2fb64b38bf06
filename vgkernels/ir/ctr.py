"""Counter blocks.  The counter is kept byte-reversed ("LE form": the block's last 32 bits,
big-endian in memory, become dword 0), so inc32 is a plain 32-bit add that wraps mod 2^32
without touching the other 96 bits; a byte swap turns it back into the AES input."""

from __future__ import annotations

from llvmlite import ir

from .core import Emitter, dvec, i32, vec


def lane_increments(w: int, start: int) -> ir.Constant:
    vals = []
    for lane in range(w):
        vals += [start + lane, 0, 0, 0]
    return ir.Constant(dvec(w), [ir.Constant(i32, v & 0xFFFFFFFF) for v in vals])


def add(em: Emitter, ctr: ir.Value, k: int | ir.Value) -> ir.Value:
    """ctr + k in the low dword (k a constant or an i32 value)."""
    b = em.b
    if isinstance(k, int):
        inc = lane_increments(1, k)
    else:
        # zeros, not undef, in dwords 1-3: undef + ctr would be undef there
        inc = b.insert_element(lane_increments(1, 0), k, ir.Constant(i32, 0))
    return b.bitcast(b.add(b.bitcast(ctr, dvec(1)), inc), vec(1))


def counter_blocks(em: Emitter, ctr: ir.Value, w: int, n_vectors: int, first: int = 0
                   ) -> list[ir.Value]:
    """AES inputs for blocks ctr+first .. ctr+first+n_vectors*w-1, W per vector."""
    b = em.b
    base = b.bitcast(em.broadcast(ctr, w), dvec(w))
    out = []
    for j in range(n_vectors):
        c = b.bitcast(b.add(base, lane_increments(w, first + j * w)), vec(w))
        out.append(em.bswap_lanes(c))
    return out
