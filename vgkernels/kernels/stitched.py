"""The stitched loop: AES-CTR of one group interleaved with GHASH of another, written once for
every vector width W (1, 2, 4 blocks per register) and group size G (V = G / W vectors).

The lane-stream scheme.  GHASH is Y_n = (Y_{n-1} + X_n) * H, so after N blocks
X_0..X_{N-1} the state is the sum of X_t * H^(N-t) (the initial state folded into X_0).  Here
the state is a W-lane vector of W interleaved streams: lane l takes the blocks l, l+W, l+2W, ..
One iteration hashes a group of G blocks, its vector k (blocks kW .. kW+W-1) times H^(G-kW)
*broadcast* to every lane, the state XORed into vector 0, then reduces once.  Block t = kW + l
so gets H^(G-t+l): lane l runs ahead of the true weight by a fixed H^l, and stays so from group
to group (the state, lane by lane, is multiplied by H^G with the next group's vector 0).  The
leftover chunk (`leftover`) repairs it: with r blocks still to hash it multiplies its first
vector, the state XORed in, by the *descending* powers H^r, H^(r-1), .., H^(r-W+1), lane l by
H^(r-l).  Lane l's stream, H^l * sum X_t H^(N-t), becomes sum X_t H^(N+r-t): the true weight;
the leftover's own blocks get theirs (H^(r-q) for its block q) the same way.  Then one
horizontal fold of the lanes and one reduction.  So the loop-carried chain never waits for a
fold across lanes, and a group costs one reduction whatever its size (aggregated reduction).

Per iteration the AES rounds of the group at block i run round-robin with the GHASH steps of a
group already encrypted (enc: the previous group, from the output or from registers
(`_enc_carried`), or in the lead loop the group before it; dec: this group, from the input),
and in a skewed loop with the first rounds of the next group.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from llvmlite import ir

from .. import abi
from ..ir import aes
from ..ir import ctr as ctrs
from ..ir.core import const_vec, dvec, i32, i64, vec
from ..ir.ghash import Parts
from .common import within
from .leftover import seal_end

if TYPE_CHECKING:
    from .bulk import BulkFn


def _c(x: int) -> ir.Constant:
    return ir.Constant(i64, x)


class GroupHash:
    """ghash_accumulate over the V vectors of one group, as steps to interleave with AES rounds:
    vector k (``data(k)``; the state ``s`` XORed into the first) times ``power(k)``."""

    def __init__(self, fn: BulkFn, data: Callable[[int], ir.Value], s: ir.Value,
                 power: Callable[[int], tuple], v: int | None = None, state_last: bool = False):
        self.fn, self.data, self.s, self.power = fn, data, s, power
        self.v = fn.p.v if v is None else v  # vectors in the group
        # ``state_last``: vector 0, which takes the state the group before's reduction has just
        # computed, after the others, which do not wait for it
        self.order = [*range(1, self.v), 0] if state_last else list(range(self.v))
        self.sum: Parts | None = None
        self.y: ir.Value | None = None  # the reduced sum, after steps(reduce=True)

    def steps(self, reduce: bool = False) -> Iterator[None]:
        em, gh = self.fn.em, self.fn.f.gh
        held = None  # Karatsuba: an even vector whose middle product waits for the next's
        for n, k in enumerate(self.order):
            d = em.bswap_lanes(self.data(k))
            if k == 0:
                d = em.xor(d, self.s)
            h, hf = (*self.power(k), None)[:2]
            if gh.paired and (held is not None or n + 1 < self.v):
                self.sum = gh.accumulate_outer(self.sum, d, h)
                if held is None:
                    held = (d, h, hf)
                else:
                    self.sum = gh.accumulate_middles(self.sum, *held, d, h, hf)
                    held = None
            else:
                self.sum = gh.accumulate(self.sum, d, h, hf)
            yield
        if reduce:
            self.y = gh.reduce(self.sum)
            yield


def held_then_loaded(fn: BulkFn, held: list[ir.Value], base: ir.Value | None
                     ) -> Callable[[int], ir.Value]:
    """A group's vector k: from ``held`` (values in registers) while there are any, then
    loaded from ``base`` (where the group was stored)."""
    em, w = fn.em, fn.p.w
    return lambda k: held[k] if k < len(held) else em.load(base, 16 * w * k, w)


def interleave(rounds: Iterator[list[ir.Value]], *others: Iterator) -> tuple[list, list]:
    """Round-robin: after each AES round one step of each other generator, then the rest of
    them.  Returns (the last round's states, the last value each other generator yielded)."""
    last: list = [None] * len(others)
    ks: list = []
    for ks in rounds:  # noqa: B007
        for n, o in enumerate(others):
            last[n] = next(o, last[n])
    for n, o in enumerate(others):
        for last[n] in o:  # noqa: B007
            pass
    return ks, last


def broadcast_powers(fn: BulkFn, g: int | None = None) -> Callable[[int], tuple]:
    """Vector k of a group of g blocks (default G) in the loop: H^(g-kW) in every lane (and its
    Karatsuba half-sum)."""
    g = fn.p.g if g is None else g
    return lambda k: fn.bcast_power(g - k * fn.p.w)


def stitched_group(fn: BulkFn, i: ir.Value, s: ir.Value, blocks: list[ir.Value] | None,
                   ghash_base: ir.Value | None, started: list[ir.Value] | None = None,
                   next_blocks: list[ir.Value] | None = None, g: int | None = None,
                   hash_g: int | None = None, hash_vectors: list[ir.Value] | None = None,
                   outputs: list[ir.Value] | None = None,
                   beside: list[ir.Value] | None = None
                   ) -> tuple[ir.Value, list[ir.Value] | None]:
    """One iteration: AES-CTR of the group at block i (counter blocks ``blocks``, as `begin`
    leaves them), interleaved with GHASH of the group at ghash_base and, in a skewed loop,
    with the first rounds of the next group (``next_blocks``).  ``started`` is this group's
    state when an earlier iteration began it.  Stores the group's output; returns (new GHASH
    state or s, the next group's started state).  ``g``: blocks in the group (default G);
    ``hash_g``: blocks hashed from ghash_base (default g).  ``beside``: counter blocks of
    other vectors whose AES chains run round by round with the group's; replaced in place by
    their keystream."""
    em, b, w = fn.em, fn.b, fn.p.w
    g = fn.p.g if g is None else g
    v = g // w
    prims, rk, skew = fn.f.prims, fn.rk[w], fn.skew
    off = b.shl(i, _c(4))

    def load_input() -> list[ir.Value]:
        return [em.load(fn.inp, b.add(off, _c(16 * w * j)), w) for j in range(v)]
    # GHASH of the input first: in-place output overwrites it
    pre = load_input() if fn.mode.hashes_input else []
    data: list[ir.Value] = []

    def last(k: ir.Value) -> list[ir.Value]:
        # the text XORed into the last round key: off the AES chain's critical path, and
        # the round's result is the output
        data.extend(pre or load_input())
        return [b.xor(k, x) for x in data]
    done = 1 if fn.first_round else 0  # what `begin` did to the counter blocks
    if started is not None:
        cur = aes.aes_rounds_from(em, prims, started, rk, skew, last)
    elif done:
        cur = aes.aes_rounds_from(em, prims, blocks, rk, done, last)
    else:
        cur = aes.aes_rounds(em, prims, blocks, rk, last)
    nxt = (aes.aes_begin(em, prims, next_blocks, rk, skew, done) if next_blocks is not None
           else iter(()))
    gh = None
    steps: Iterator = iter(())
    if ghash_base is not None or hash_vectors is not None:
        hg = g if hash_g is None else hash_g
        gh = GroupHash(fn, held_then_loaded(fn, hash_vectors or [], ghash_base), s,
                       broadcast_powers(fn, hg), hg // w, fn.hash_state_last)
        # the first ``fn.hash_lag`` rounds without a multiply: with (V)PCLMULQDQ the limit
        # (Zen 5), the AES chains begun first leave it no gaps later (`Backend.hash_lag`)
        steps = itertools.chain([None] * fn.hash_lag, gh.steps(reduce=True))
    side = aes.aes_rounds(em, prims, beside, rk) if beside else iter(())
    out, (_, begun, side_ks) = interleave(cur, steps, nxt, side)
    if beside:
        beside[:] = side_ks
    if outputs is not None:
        outputs.extend(out)
    for j in range(v):
        em.store(out[j], fn.out, b.add(off, _c(16 * w * j)))
    return (gh.y if gh is not None else s), begun


def _fast(fn: BulkFn, i: ir.Value, g: int) -> ir.Value:
    """The counter fast path's test for the group after the one at block i: its counters are
    c+g .. c+2g-1, and adding at most 2g - 1 to the last byte (the top byte of dword 3 of a
    big-endian block) cannot carry when low(c) + 2g - 1 <= 255.  It reads the public copy of
    the counter (pub_ctr + i), never c: with no public copy (pub_ctr < 0) every group takes the
    general path, so the branch depends on public data only."""
    b = fn.b
    assert 2 * g <= 256, f"group {g}: the byte-add fast path needs 2G <= 256"
    low = b.and_(b.add(fn.pub_ctr, i), _c(0xFF))
    return b.and_(b.icmp_signed(">=", fn.pub_ctr, _c(0)),
                  b.icmp_unsigned("<=", low, _c(256 - 2 * g)))


def _byte_add(fn: BulkFn, d: ir.Value, n: int) -> ir.Value:
    """n added to the last byte of every big-endian block of d (as dwords; no carry: see
    _fast)."""
    b, w = fn.b, fn.p.w
    inc = ir.Constant(dvec(w), [ir.Constant(i32, (n << 24) if k % 4 == 3 else 0)
                                for k in range(4 * w)])
    return b.bitcast(b.add(d, inc), vec(w))


def derived(fn: BulkFn, first: ir.Value, g: int | None = None) -> list[ir.Value]:
    """The next group's counter vectors from this group's first one (vector k adds g + kW to
    the last byte), branch-free: right only where _fast holds (`checked`)."""
    g = fn.p.g if g is None else g
    d = fn.b.bitcast(first, dvec(fn.p.w))
    return [_byte_add(fn, d, g + k * fn.p.w) for k in range(g // fn.p.w)]


def checked(fn: BulkFn, c: ir.Value, i: ir.Value, blocks: list[ir.Value],
            base: list[ir.Value]) -> tuple[list[ir.Value], list[ir.Value]]:
    """The counter blocks of the group at block i (first counter c) where the group before it
    was on the fast path (`_fast`), else counted (`counted_states`).  The branch comes before
    the group: with it after, codegen sank the GHASH (used only by the next iteration) below
    it, unstitched from the AES.  Without the table, the fast path's blocks are ``blocks``,
    which `late_next` derived from the group before; with it (``fn.first_round``) they are
    first-round states from the table and ``base`` (the same run of 256 counters), computed
    here at the top of the iteration, so nothing lives across the group.  Returns (the blocks,
    the base the loop carries on)."""
    em, b, g = fn.em, fn.b, fn.p.g
    fast = _fast(fn, b.sub(i, _c(g)), g)
    if not fn.first_round:
        return em.if_else_values(
            fast, lambda: blocks, lambda: ctrs.counter_blocks(em, c, fn.p.w, fn.p.v),
            "ctrchk"), base
    low = b.and_(b.add(fn.pub_ctr, i), _c(0xFF))
    nblk, nbase = em.if_else_values(
        fast, lambda: [first_round_table(fn, base[0], low, fn.p.v), list(base)],
        lambda: counted_states(fn, c, fn.p.v), "ctrtab")
    return nblk, nbase


def late_next(fn: BulkFn, blocks: list[ir.Value]) -> list[ir.Value]:
    """What the late form carries to the next iteration's `checked`: the next group's counter
    blocks derived branch-free from this group's, or nothing with the table."""
    return [] if fn.first_round else derived(fn, blocks[0])


def counted_states(fn: BulkFn, c: ir.Value, v: int) -> list:
    """[v vectors of counter blocks from c, begun (`begin`), and their run's base
    (`first_round_base`)]: the general path of the counter's fast-path branches."""
    return [begin(fn, ctrs.counter_blocks(fn.em, c, fn.p.w, v)), first_round_base(fn, c)]


def first_round_base(fn: BulkFn, c: ir.Value) -> list[ir.Value]:
    """[R1(x0)] in every lane: the first round of c's block with its last byte zero, which the
    table's entries complete for each last byte (`abi.CTX_ROUND1`).  The same for a run of 256
    counters: the loop carries it, and computes it again on the counted path.  It is right
    where the fast path reads it: a fast group after i lies in the run of the counter at i
    (`_fast` checks both groups), and that run is the one of the last counted group or, if
    none, of the loop's first."""
    if not fn.first_round:
        return []
    em, b = fn.em, fn.b
    rk = fn.rk[1]
    x0 = b.and_(em.bswap_lanes(c), const_vec(1, [-1, 0x00FFFFFFFFFFFFFF]))
    return [em.broadcast(aes.first_round(em, fn.f.prims, [x0], rk)[0], fn.p.w)]


def first_round_table(fn: BulkFn, base: ir.Value, low: ir.Value, v: int) -> list[ir.Value]:
    """The first-round states of v vectors of counters whose last bytes are low, low + 1, ..
    (no carry: `_fast`): base XOR the table's entries, a vector of W consecutive entries per
    load.  In place of a byte add, the round-0 XOR and one aesenc per vector: per 256 B on
    vaes_avx2 72 AES instructions instead of 80.  The index is the public counter."""
    em, b, w = fn.em, fn.b, fn.p.w
    at = b.add(_c(abi.CTX_ROUND1), b.shl(low, _c(4)))
    return [b.xor(base, em.load(fn.ctx, b.add(at, _c(16 * k * w)), w)) for k in range(v)]


def begin(fn: BulkFn, blocks: list[ir.Value]) -> list[ir.Value]:
    """Counter blocks as the loops carry them: as they are, or after round key 0 and the
    first round (``fn.first_round``)."""
    if not fn.first_round:
        return blocks
    return aes.first_round(fn.em, fn.f.prims, blocks, fn.rk[fn.p.w])


def advance(fn: BulkFn, c: ir.Value, i: ir.Value, blocks: list[ir.Value], derive: bool,
            g: int | None = None, base: list[ir.Value] | None = None
            ) -> tuple[list[ir.Value], list[ir.Value]]:
    """counter_blocks for the group (g blocks, default G) after the one at block i whose first
    counter is c and counter blocks ``blocks``: one add per vector on the big-endian blocks,
    without the byte swaps, while the counters' low byte cannot carry (`_fast`).  ``derive``:
    every vector from blocks[0] (vector k adds g + kW to the last byte), so only blocks[0]
    needs to live until here; else vector k from blocks[k] (adds g).

    With ``fn.first_round`` the blocks are first-round states (`begin`): on the fast path
    from the table and ``base`` (`first_round_base`), else counted and begun, with a base from
    their first counter.  Returns the blocks and the base the loop carries on ([] without the
    table)."""
    em = fn.em
    g = fn.p.g if g is None else g
    v = g // fn.p.w

    def counted() -> list:
        return counted_states(fn, ctrs.add(em, c, g), v)

    def added() -> list:
        if fn.first_round:
            assert base
            low = fn.b.and_(fn.b.add(fn.b.add(fn.pub_ctr, i), _c(g)), _c(0xFF))
            return [first_round_table(fn, base[0], low, v), list(base)]
        if derive:
            return [derived(fn, blocks[0], g), []]
        return [[_byte_add(fn, fn.b.bitcast(x, dvec(fn.p.w)), g) for x in blocks], []]
    nblk, nbase = em.if_else_values(_fast(fn, i, g), added, counted, "ctrbe")
    return nblk, nbase


def hash_group(fn: BulkFn, i: ir.Value, s: ir.Value) -> ir.Value:
    """GHASH of the group at block i of the input (no AES): the hash mode's loop body."""
    w = fn.p.w
    base = fn.em.gep(fn.inp, fn.b.shl(i, _c(4)))
    gh = GroupHash(fn, lambda k: fn.em.load(base, 16 * w * k, w), s, broadcast_powers(fn))
    for _ in gh.steps(reduce=True):
        pass
    return gh.y


# -- the loops, one per mode's shape ----------------------------------------------------------
def enc_region(fn: BulkFn, end: ir.Value, s0: ir.Value, ctr: ir.Value) -> list[ir.Value]:
    """A prologue encrypts group 0 (nothing to hash yet); then each iteration encrypts the
    group at i and hashes the group before it, from the output.  Leaves that last group
    pending.  Skewed: each iteration also begins the next group's rounds.  In the carried
    function (``fn.carry``: `bulk.carries`) the loop hashes the previous group from registers
    (`_enc_carried`)."""
    em, b, g = fn.em, fn.b, fn.p.g
    zero_i = _c(0)
    blocks0 = begin(fn, ctrs.counter_blocks(em, ctr, fn.p.w, fn.p.v))
    base0 = first_round_base(fn, ctr)
    skewed = fn.skew > 0
    # `Backend.enc_late`, not skewed: the next group's counters derived branch-free from
    # vector 0 after the group and checked at the top of the next iteration (`checked`), so
    # neither the 8 next vectors nor a branch sit across the group: 19 fewer instructions and
    # 8 fewer stack references per iteration; seal 512 B-4 KiB 0.83-0.97x, 16-64 KiB the
    # same (vaes_avx512, same-run A/B).  With the first-round table the states come from it
    # at the top of the iteration (`checked`): per group 8 zmm vaesenc, 8 adds and 8
    # XORs fewer, seal 16-64 KiB 0.94x (Zen 4, design notes "Zen 4, eleventh session").  On
    # aesni_pclmul_avx (16 registers) 18 instructions and 20 stack references fewer, seal
    # 1.5-8 KiB 0.91-0.96x, 16-64 KiB 0.96-0.99x (Zen 5); its SSE sibling measured 1.04-1.10x.
    late = not skewed and fn.p.backend.enc_late
    if late:  # with the table, the states come from it at the top (`checked`)
        nxt1, base1 = late_next(fn, blocks0), base0
    else:
        nxt1, base1 = advance(fn, ctr, zero_i, blocks0, derive=False, base=base0)
    if fn.one_group:  # called below two groups (`BulkFn.call_carry`): group 0 is pending
        return _enc_one_group(fn, s0, ctr, blocks0)
    out0: list[ir.Value] = []
    s1, st1 = stitched_group(fn, zero_i, s0, blocks0, None, None, nxt1 if skewed else None,
                             outputs=out0)
    c1 = ctrs.add(em, ctr, g)
    if fn.end_first:  # its AES chains beside the loop's (`leftover.seal_end`)
        seal_end(fn, ctr)
    if fn.carry:  # the carried function (`BulkFn.call_carry`)
        return _enc_carried(fn, end, s1, c1, nxt1, base1, out0)
    with em.loop("stitch", lambda v: b.icmp_unsigned("<=", b.add(v.i, _c(g)), end),
                 i=_c(g), s=s1, ctr=c1, blocks=nxt1, started=st1 or [], base=base1) as v:
        # blocks: counter blocks of the group at i (skewed: already begun, in started)
        base = em.gep(fn.out, b.shl(b.sub(v.i, _c(g)), _c(4)))
        if late:
            blocks, nbase = checked(fn, v.ctr, v.i, v.blocks, v.base)
            s2, st2 = stitched_group(fn, v.i, v.s, blocks, base)
            nblk = late_next(fn, blocks)
        else:
            nblk, nbase = advance(fn, v.ctr, v.i, v.blocks, derive=False, base=v.base)
            if skewed:
                s2, st2 = stitched_group(fn, v.i, v.s, None, base, v.started, nblk)
            else:
                s2, st2 = stitched_group(fn, v.i, v.s, v.blocks, base)
        v.i, v.s, v.ctr = b.add(v.i, _c(g)), s2, ctrs.add(em, v.ctr, g)
        v.blocks, v.started, v.base = nblk, st2 or [], nbase
    fn.begun = list(v.started)  # the group after the loop's, begun: the leftover's counters
    return [v.i, v.s, v.ctr]


def one_end_vector(fn: BulkFn) -> ir.Value:
    """The text (with the record form's byte) is a group and at most one vector more, from
    the length alone: the masked end is one vector, right after group 0."""
    # the text (nbytes, and the record form's byte) in 16g + 1 .. 16g + 16w bytes
    return within(fn.b, fn.nbytes, 16 * fn.p.g + (0 if fn.extra else 1), 16 * fn.p.w)


def _enc_one_group(fn: BulkFn, s0: ir.Value, ctr: ir.Value, blocks0: list[ir.Value]
                   ) -> list[ir.Value]:
    """Group 0 of a one-group function, left pending.  In the one for a masked end of one
    vector (``fn.one_end``, `one_end_vector`), that vector's AES chain runs round by round
    with the group's (`BulkFn.end_ks`, taken by `Leftover.piece_keystream`): after them, it
    was the last chain to finish, and seal 513-576 B cost 9-10 ns more than 512 B, 7 of them
    its AES (Zen 4).  Only there: with two or more end vectors (the first beside, the rest
    after) 577-768 B measured 1.04-1.06x, and for no end the chain is wasted (512 B 1.05x);
    in one function with both forms behind a branch, 577-1023 B measured up to 1.01x."""
    em, g, w = fn.em, fn.p.g, fn.p.w
    beside = ctrs.counter_blocks(em, ctrs.add(em, ctr, g), w, 1) if fn.one_end else None
    out0: list[ir.Value] = []
    s1, _ = stitched_group(fn, _c(0), s0, blocks0, None, outputs=out0, beside=beside)
    fn.pending_vectors = out0[:carried_vectors(fn)]
    # pinned here by an empty asm: else LLVM sinks the chain into the branch that uses it,
    # after the group (seal 513-576 B measured 4% slower so)
    ty = ir.FunctionType(vec(w), [vec(w)])
    fn.end_ks = [fn.b.asm(ty, "", "=v,0", [k], True) for k in beside or []]
    return [_c(g), s1, ctrs.add(em, ctr, g)]


# From how many groups seal takes `_enc_carried`
# (`BulkFn.call_carry`): from the first, where the stitched region starts.  With the
# leftover's pending group held too, 512 B-2 KiB measured 0.92-0.99 against the reloading
# loop (vaes_avx512, same-run A/B, output 5 past a line); without it, from 2 groups 1.00-1.04.
CARRY_MIN_GROUPS = 1
# The last vectors of each group the carried loop reloads from the output instead of holding
# (hashed last, so stored an iteration before).  Held, LLVM spills the last one: a store to a
# fixed stack slot every iteration, and when that slot's page offset matches a load the
# loop repeats (4K aliasing) seal runs 12-23% slower at one 64-byte window of stack offsets
# (Sapphire Rapids, issue 12 target 4).
CARRY_RELOADED = 2


def carried_vectors(fn: BulkFn) -> int:
    """How many vectors of a group the carried loop holds in registers."""
    return fn.p.v - CARRY_RELOADED


def _enc_carried(fn: BulkFn, end: ir.Value, s: ir.Value, c1: ir.Value,
                 nxt1: list[ir.Value], base1: list[ir.Value], out0: list[ir.Value]
                 ) -> list[ir.Value]:
    """enc_region hashing the previous group from the registers it was stored from, not
    reloaded from the output.  A zmm store reloaded at once waits for store-to-load
    forwarding: on Zen 4 twice as long when the vector crosses a cache line (18.5 ticks
    against 9.6), and the one-back loop's reloads cost vaes_avx512 8-17% at 4-16 KiB there.
    On Zen 5 they cost an aligned output too: carried, seal measured 0.92-0.95 of the
    reloading loop at 512 B-64 KiB, 64-byte aligned or 32 past a line.  So every output
    takes this loop, though the 8 vectors take registers from the round keys (4 more spill
    reloads per iteration): on Zen 4, at 32 past a line where the reloads forwarded at full
    speed, it measured 1.003-1.010 of the reloading loop.  The last CARRY_RELOADED(_KARATSUBA)
    are reloaded all the same, an iteration after their store (no spill store in the loop).
    The last group's held vectors go to the leftover (``fn.pending_vectors``), which hashes
    the pending group from them and reloads the rest."""
    em, b, g = fn.em, fn.b, fn.p.g
    held = carried_vectors(fn)
    with em.loop("stitchr", lambda v: b.icmp_unsigned("<=", b.add(v.i, _c(g)), end),
                 i=_c(g), s=s, ctr=c1, blocks=nxt1, base=base1, prev=out0[:held]) as v:
        blocks, v.base = checked(fn, v.ctr, v.i, v.blocks, v.base)
        outs: list[ir.Value] = []
        stored = em.gep(fn.out, b.shl(b.sub(v.i, _c(g)), _c(4)))
        s2, _ = stitched_group(fn, v.i, v.s, blocks, stored, hash_vectors=list(v.prev),
                               outputs=outs)
        v.i, v.s, v.ctr = b.add(v.i, _c(g)), s2, ctrs.add(em, v.ctr, g)
        v.blocks, v.prev = late_next(fn, blocks), outs[:held]
    fn.pending_vectors = list(v.prev)  # the leftover hashes them from here, too
    return [v.i, v.s, v.ctr]


def enc_lead(fn: BulkFn, end: ir.Value, s0: ir.Value, ctr: ir.Value) -> list[ir.Value]:
    """enc over blocks [0, end), end a multiple of the lead group L = ``fn.lead_group`` and
    at least 3L, in groups of L (not skewed): a prologue encrypts group 0, each iteration
    encrypts the group at i and hashes the one before it (``Backend.enc_lag`` 2: a prologue of
    groups 0 and 1, each iteration hashes the group two back, whose stores have reached L1,
    and the last one both stored groups at once); the last group is hashed at the end with the
    descending powers (lane l of vector k by H^(L-kW-l)) and the lanes folded, so the result is
    the reduced GHASH value of everything (one block), ready for another bulk call."""
    em, b, w, lead = fn.em, fn.b, fn.p.w, fn.lead_group
    lag = fn.p.backend.enc_lag
    blocks, s, c = begin(fn, ctrs.counter_blocks(em, ctr, w, lead // w)), s0, ctr
    base = first_round_base(fn, ctr)
    for k in range(lag):  # the first groups: nothing stored yet to hash
        stitched_group(fn, _c(k * lead), s, blocks, None, g=lead)
        blocks, base = advance(fn, c, _c(k * lead), blocks, derive=True, g=lead, base=base)
        c = ctrs.add(em, c, lead)
    with em.loop(f"lead{lead}", lambda v: b.icmp_unsigned("<=", b.add(v.i, _c(lag * lead)), end),
                 i=_c(lag * lead), s=s, ctr=c, blocks=blocks, base=base) as v:
        base = em.gep(fn.out, b.shl(b.sub(v.i, _c(lag * lead)), _c(4)))
        v.s, _ = stitched_group(fn, v.i, v.s, v.blocks, base, g=lead)
        i, c = v.i, v.ctr
        v.i, v.ctr = b.add(i, _c(lead)), ctrs.add(em, c, lead)
        v.blocks, v.base = advance(fn, c, i, v.blocks, derive=True, g=lead, base=v.base)
    i, s, c = v.i, v.s, v.ctr
    if lag == 2:  # the last group's iteration hashes both stored groups
        base = em.gep(fn.out, b.shl(b.sub(i, _c(2 * lead)), _c(4)))
        s, _ = stitched_group(fn, i, s, v.blocks, base, g=lead, hash_g=2 * lead)
        i, c = b.add(i, _c(lead)), ctrs.add(em, c, lead)
    base = em.gep(fn.out, b.shl(b.sub(i, _c(lead)), _c(4)))
    gh = GroupHash(fn, lambda k: em.load(base, 16 * w * k, w), s,
                   lambda k: (fn.f.power(fn.ctx, lead - k * w, w),), lead // w)
    for _ in gh.steps():
        pass
    assert gh.sum is not None
    y = fn.f.gh.reduce(fn.f.gh.fold_parts(gh.sum))
    return [i, y, c]


def counting_region(fn: BulkFn, name: str, end: ir.Value, s0: ir.Value, ctr: ir.Value,
                    hash_input: bool) -> list[ir.Value]:
    """dec (hash_input: GHASH of the group it decrypts, from the input) and ctr (no GHASH):
    each iteration encrypts the group at i and computes the next group's counter blocks.
    dec first runs a loop over groups of ``fn.lead_group`` blocks when that is larger than G
    (more independent AES chains per iteration, one reduction per lead group), then the loop
    over groups of G; the lane streams do not depend on the group size (lane l runs ahead by
    H^l in both), so the second loop and the leftover continue the first's state as is."""
    i, s, c = _c(0), s0, ctr
    lead = fn.lead_group
    if hash_input and lead > fn.p.g:
        # behind a branch: the lead loop's first counter blocks cost 3 ns at 256 B otherwise
        i, s, c = fn.em.if_else_values(
            fn.b.icmp_unsigned(">=", end, _c((1 + fn.mode.reserve) * lead)),
            lambda: _counting_loop(fn, f"{name}{lead}", lead, end, i, s, c, hash_input),
            lambda: [i, s, c], "lead")
    return _counting_loop(fn, name, fn.p.g, end, i, s, c, hash_input)


def _counting_loop(fn: BulkFn, name: str, g: int, end: ir.Value, i0: ir.Value, s0: ir.Value,
                   ctr: ir.Value, hash_input: bool) -> list[ir.Value]:
    """counting_region's loop over groups of g blocks, from block i0 while the mode's reserve
    is left after the group."""
    em, b = fn.em, fn.b
    wide = fn.p.w >= 4  # AVX-512: 32 vector registers
    # dec on AVX-512 with the first-round table: the group's states from the table at the top
    # of its iteration (`checked`), as in enc's carried loop, so nothing lives across the
    # group.  Computed first for the next iteration (below), LLVM kept 6 of the 8 in stack
    # slots: open 1-64 KiB measured 0.96-0.99 without them (vaes_avx512, Zen 5).
    at_top = wide and hash_input and fn.first_round and g == fn.p.g
    blocks0 = [] if at_top else begin(fn, ctrs.counter_blocks(em, ctr, fn.p.w, g // fn.p.w))
    base0 = first_round_base(fn, ctr)
    span = (1 + fn.mode.reserve) * g
    with em.loop(name, lambda v: b.icmp_unsigned("<=", b.add(v.i, _c(span)), end),
                 i=i0, s=s0, ctr=ctr, blocks=blocks0, base=base0) as v:
        base = em.gep(fn.inp, b.shl(v.i, _c(4))) if hash_input else None
        i, c = v.i, v.ctr
        if at_top:
            blocks, v.base = checked(fn, c, i, [], v.base)
            v.s, _ = stitched_group(fn, i, v.s, blocks, base, g=g)
            v.i, v.ctr = b.add(i, _c(g)), ctrs.add(em, c, g)
        else:
            # With 32 registers the next group's counters come first: after the group, the
            # counter's fast-path branch let codegen sink the whole GHASH (used only by the
            # next iteration) below the AES into the latch, unstitched; first, open 16-64 KiB
            # measured 11-14% faster on vaes_avx512 (without the table).  On 16 registers the
            # early counters stay live through the group: 1-5% slower there, so they keep the
            # late form, derived from blocks[0]: the other vectors need not stay live to the
            # loop's end (open 5-6% faster on aesni_pclmul_avx).
            nxt = advance(fn, c, i, v.blocks, derive=False, g=g, base=v.base) if wide else None
            v.s, _ = stitched_group(fn, i, v.s, v.blocks, base, g=g)
            v.i, v.ctr = b.add(i, _c(g)), ctrs.add(em, c, g)
            v.blocks, v.base = nxt or advance(fn, c, i, v.blocks, derive=True, g=g, base=v.base)
    return [v.i, v.s, v.ctr]


def hash_region(fn: BulkFn, end: ir.Value, s0: ir.Value, ctr: ir.Value) -> list[ir.Value]:
    """GHASH only, a group per iteration; the last group is left to the leftover."""
    em, b, g = fn.em, fn.b, fn.p.g
    with em.loop("ghash", lambda v: b.icmp_unsigned("<=", b.add(v.i, _c(2 * g)), end),
                 i=_c(0), s=s0, ctr=ctr) as v:
        i = v.i
        v.i = b.add(i, _c(g))
        v.s = hash_group(fn, i, v.s)
    return [v.i, v.s, v.ctr]
