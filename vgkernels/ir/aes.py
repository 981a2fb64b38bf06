"""AES in IR: key expansion (FIPS-197 5.2) over a SubWord primitive, and the round sequence.

SubWord comes from the backend's own aesenclast: with one 32-bit word broadcast to all four
columns, ShiftRows moves nothing and the last round is SubBytes plus a zero round key.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

from llvmlite import ir

from .core import Emitter, dvec, i32, vec, zero

NROUNDS = {16: 10, 24: 12, 32: 14}
# the last round's key per vector, given the last round key (see aes_rounds)
LastKeys = Callable[[ir.Value], list[ir.Value]] | None
RCON = (0x01, 0x02, 0x04, 0x08, 0x10, 0x20, 0x40, 0x80, 0x1B, 0x36)


def sub_word(em: Emitter, prims, w: ir.Value) -> ir.Value:
    b = em.b
    v = b.insert_element(ir.Constant(dvec(1), None), w, ir.Constant(i32, 0))
    splat = ir.Constant(dvec(1), [ir.Constant(i32, 0)] * 4)
    v = b.shuffle_vector(v, ir.Constant(dvec(1), None), splat)
    s = prims.aesenclast(b.bitcast(v, vec(1)), zero(1))
    return b.extract_element(b.bitcast(s, dvec(1)), ir.Constant(i32, 0))


def key_expansion(em: Emitter, prims, key: ir.Value, nk: int) -> list[ir.Value]:
    """FIPS-197 KeyExpansion for Nk words: returns Nr+1 round keys as <2 x i64>."""
    b = em.b
    nr = nk + 6
    words = [em.load_int(key, 4 * i, i32) for i in range(nk)]
    for i in range(nk, 4 * (nr + 1)):
        temp = words[i - 1]
        if i % nk == 0:
            rot = b.or_(b.lshr(temp, ir.Constant(i32, 8)), b.shl(temp, ir.Constant(i32, 24)))
            temp = b.xor(sub_word(em, prims, rot), ir.Constant(i32, RCON[i // nk - 1]))
        elif nk > 6 and i % nk == 4:
            temp = sub_word(em, prims, temp)
        words.append(b.xor(words[i - nk], temp))
    keys = []
    for r in range(nr + 1):
        v = ir.Constant(dvec(1), None)
        for j in range(4):
            v = b.insert_element(v, words[4 * r + j], ir.Constant(i32, j))
        keys.append(b.bitcast(v, vec(1)))
    return keys


def _last_round(prims, s: list[ir.Value], rk: ir.Value, last: LastKeys) -> list[ir.Value]:
    keys = last(rk) if last is not None else [rk] * len(s)
    return [prims.aesenclast(x, k) for x, k in zip(s, keys, strict=True)]


def aes_rounds(em: Emitter, prims, states: list[ir.Value], rks: Sequence[ir.Value],
               last: LastKeys = None) -> Iterator[list[ir.Value]]:
    """AES on several vectors, round-major (independent blocks in flight); yields after every
    round so a stitched loop can interleave other work, and finally yields the results.
    ``last``: the last round's key per vector from the last round key (default: that key)."""
    b = em.b
    s = [b.xor(x, rks[0]) for x in states]
    nr = len(rks) - 1
    for r in range(1, nr):
        s = [prims.aesenc(x, rks[r]) for x in s]
        yield s
    yield _last_round(prims, s, rks[nr], last)


def aes_rounds_from(em: Emitter, prims, states: list[ir.Value], rks: Sequence[ir.Value], done: int,
                    last: LastKeys = None) -> Iterator[list[ir.Value]]:
    """The rounds after `done` (states already had round key 0 and aesenc 1..done applied);
    yields after every round, the last yield being the keystream."""
    nr = len(rks) - 1
    s = states
    for r in range(done + 1, nr):
        s = [prims.aesenc(x, rks[r]) for x in s]
        yield s
    yield _last_round(prims, s, rks[nr], last)


def aes_begin(em: Emitter, prims, states: list[ir.Value], rks: Sequence[ir.Value], upto: int,
              done: int = 0) -> Iterator[list[ir.Value]]:
    """Round key 0 and aesenc 1..upto (a group started early, for a skewed loop); yields after
    every round, the last yield being the partly encrypted states.  ``done``: the states
    already had round key 0 and aesenc 1..done applied."""
    s = states if done else [em.b.xor(x, rks[0]) for x in states]
    yield s
    for r in range(done + 1, upto + 1):
        s = [prims.aesenc(x, rks[r]) for x in s]
        yield s


def first_round(em: Emitter, prims, states: list[ir.Value], rks: Sequence[ir.Value]
                ) -> list[ir.Value]:
    """Round key 0 and aesenc 1: the states the first-round table completes or stands in
    for (`abi.CTX_ROUND1`), which `aes_rounds_from(.., done=1)` continues."""
    return [prims.aesenc(em.b.xor(x, rks[0]), rks[1]) for x in states]


def aes_encrypt(em: Emitter, prims, states: list[ir.Value], rks: Sequence[ir.Value]
                ) -> list[ir.Value]:
    out = states
    for out in aes_rounds(em, prims, states, rks):  # noqa: B007
        pass
    return out
