"""The bulk functions: the stitched loop (`stitched`) then the leftover chunk (`leftover`), one
generator for every vector width, group size and tail strategy, in four modes (`modes`).

``vg.bulk.<mode>.<nr>(ctx, io, in, out, nbytes, has_len)`` processes ``nbytes`` (whole blocks,
then at most one partial block) starting from the GHASH state and counter in ``io`` and, when
``has_len``, ends with the length block in ``io``; it leaves the reduced GHASH value and the
next counter in ``io``.  io = {Y: 16 bytes, reflected; ctr: 16 bytes, LE form; len block}.

The modes with a counter take one more argument, ``pub_ctr``: the counter's low 32 bits at entry
when they are public (a 96-bit nonce: J0 = nonce || 1, so they count blocks from 2), else -1.
It alone decides the counter fast path (see `stitched.advance`): for other nonces J0 =
GHASH_H(IV) depends on H, and a branch on its low byte would leak bits of J0 (linear in H for a
16-byte IV); they always take the branch-free general path instead.

The functions called with the stack aligned (`frames.aligned_call`: enc's carried function,
dec's body on AVX-512) take has_len and pub_ctr as one argument, pub_ctr * 2 + has_len
(`packed_args`), so all six arguments travel in registers.

Tail strategies (`Variant.tail`, the only meaning of "tail" here): ``full``, the stitched loop
takes every group; ``split``, it stops at a multiple of 2G and the rest goes through separate
ctr and hash calls, then the leftover's partial block and length block.
"""

from __future__ import annotations

from llvmlite import ir

from .. import abi
from ..backends import Backend
from ..ir import aes
from ..ir import ctr as ctrs
from ..ir.core import Reloaded, i1, i64, ptr, vec, void, zero
from . import frames, stitched
from .common import NR, Fn, Params, one_block_wide
from .leftover import Leftover, U, seal_end
from .modes import CTR, DEC, ENC, HASH, MODES, Mode


def _c(x: int) -> ir.Constant:
    return ir.Constant(i64, x)


LEAD_MIN_GROUPS = 16


def lead_from(backend: Backend) -> int:
    """Whole blocks from which enc calls the lead function: one short of LEAD_MIN_GROUPS lead
    groups, so 4095 B (255 blocks and a partial one) takes the lead loop as 4096 B does (from
    256 blocks, 4095 B seal measured 1.069x 4096 B's time on vaes_avx2, Zen 3)."""
    return LEAD_MIN_GROUPS * backend.lead_group - 1


class BulkFn:
    """One bulk function under construction: its arguments and what every step reads (round
    keys, the loop's broadcast powers), emitted once at the top of the function."""

    def __init__(self, module: ir.Module, params: Params, mode: Mode, nr: int,
                 extra: bool = False, lead: bool = False, carry: bool = False,
                 body: bool = False, one_group: bool = False, one_end: bool = False,
                 below_group: bool = False):
        """``extra``: the two-slice form: one more byte, passed by value, follows the nbytes of
        ``in``; the final (masked or partial) block takes it, so the last block of a TLS record
        (payload, then the content-type byte) needs no separate call and no extra reduction."""
        self.p, self.mode, self.nr, self.extra = params, mode, nr, extra
        w, g = params.w, params.g
        # The leftover hashes at most 2G - 1 whole blocks + the partial + the length block, each
        # at its own power: the table must reach H^(2G+1); a vector of W powers from H^1 runs
        # W - 1 blocks into the zero padding.
        assert 2 * g + 1 <= abi.CTX_NPOW, f"group {g}: CTX_NPOW {abi.CTX_NPOW} < 2G + 1"
        assert w - 1 <= abi.CTX_POWER_PAD, f"width {w}: CTX_POWER_PAD < W - 1"
        name = (lead_symbol(mode, nr) if lead
                else carry_symbol(nr, extra, one_group or one_end, one_end) if carry
                else below_symbol(mode, nr) if below_group
                else body_symbol(mode, nr) if body else mode.symbol(nr, extra))
        # called through `frames.aligned_call`: six arguments, all in registers (`packed_args`)
        self.packed = body or below_group or (carry and not extra)
        # dec's function for less than a group (`aligned_entry`)
        self.below_group = below_group
        # vectors per iteration of the leftover's loop, so the most its masked end takes
        self.leftover_vectors = min(params.v, U)
        types = mode.arg_types(extra)
        self.f = Fn(module, params, name, void, types[:5] + [i64] if self.packed else types)
        self.carry = carry  # enc's loop hashing from registers (`stitched._enc_carried`)
        # the carried function for one group: no loop (`call_carry`); ``one_end``: for one
        # group and a masked end of one vector (`stitched._enc_one_group`)
        self.one_group = one_group or one_end
        self.one_end = one_end
        # the masked end sealed beside the loop, hashed from the output (`leftover.seal_end`)
        self.end_first = carry and not self.one_group and seals_end_first(params)
        self.pending_vectors: list[ir.Value] = []  # the pending group as values, if held
        # ``one_end``: the masked end's keystream, from beside group 0
        self.end_ks: list[ir.Value] = []
        # a skewed enc loop's last iteration began the rounds of the group after it, whose
        # counters are the leftover's: the leftover finishes them (`Leftover.rest_keystream`)
        self.begun: list[ir.Value] = []
        self.f.fn.attributes.add("noinline")
        if one_block_wide(params.backend) and params.backend.vex:
            # same run, Zen 3, two offsets, aesni_pclmul_avx seal 769-2047 B 0.96-0.98x, open
            # 400-512 B 0.95-0.97x, 4-64 KiB 0.98-1.01x; on aesni_pclmul (SSE) 1-64 KiB read
            # 1.01-1.04x, not kept there
            self.f.reloadable_keys()
        if params.backend.masked:
            self.f.readable_ctx()  # the table's loads may be repeated where they are used
        self.em, self.b = self.f.em, self.f.b
        if params.w == 2:  # ymm spill slots (`frames`)
            frames.realign(self.b, 32)
        self.ctx, self.io, self.inp, self.out, self.nbytes, self.has_len = self.f.args[:6]
        self.pub_ctr = self.f.args[6] if mode.keystream and not self.packed else None
        if self.packed:
            self.has_len, self.pub_ctr = unpacked(self.b, self.f.args[5])
        self.extra_byte = self.f.args[-1] if extra else None
        # rounds of the next group begun early (enc's skewed loop); at most nr - 1
        self.skew = min(params.variant.skew or 0, nr - 1)
        # the stitched groups' multiplies begun late, the state's vector hashed last
        self.hash_lag = params.backend.hash_lag if mode.stitched else 0
        self.hash_state_last = params.backend.hash_state_last and mode.stitched
        # the loops' counter blocks are states after the first round (`stitched.begin`)
        self.first_round = params.backend.first_round and mode.keystream
        self.lead_min = lead_from(params.backend)
        # enc's function whose every group goes to the carried function
        carried_away = mode is ENC and not lead and not carry and carries(params)
        if carried_away:
            self.call_carry()
        if below_group or carried_away:
            # The leftover sees less than a group: its masked end takes every vector as one
            # straight-line piece, all AES chains in flight, where the loop took 4 vectors at a
            # time.  Zen 5, same run, two stack offsets: open 320-496 B 0.85-0.91 (512 B-16 KiB
            # 0.98-1.007), records 320-496 B 0.89-0.96, seal 336-384 B 0.965, 400-496 B
            # 0.99-1.02.
            self.leftover_vectors = params.v
        if mode is ENC and not lead and params.backend.lead_group > g:
            # first: the round keys and powers below are then loaded after the call, not
            # kept across it (every vector register is caller-saved)
            self.call_lead()
        self.rk: dict[int, list[ir.Value]] = {}
        if mode.keystream:
            self.rk[w] = self.f.round_keys(self.ctx, nr, w)
            if w > 1:
                self.rk[1] = self.f.round_keys(self.ctx, nr, 1)
        # The lead group: the backend's largest (16 on vaes_avx2: 8 ymm AES chains against 4
        # in a group of 8), in dec's first loop (stitched.counting_region) and in enc's lead
        # function (``lead``, called by enc from LEAD_MIN_GROUPS lead groups: `build`).  A
        # default group of 16 measured 5-7% faster at 16-64 KiB seal and 15% for open, but
        # seal 35-45% slower at 256-512 B (its leftover).
        self.lead_group = params.backend.lead_group if mode is DEC or lead else g
        assert 2 * self.lead_group <= abi.CTX_NPOW
        # H^e in every lane (and its Karatsuba half-sum) for e = W, 2W, .., the lead group:
        # vector k of a group of g blocks takes H^(g-kW).  Hoisted here: loading the lead
        # loop's powers in the loop instead made it 4% slower.
        self.bcast: dict[int, tuple[ir.Value | Reloaded, ir.Value | Reloaded | None]] = {}
        if mode.hashed is not None:
            gh, es = self.f.gh, range(max(g, self.lead_group), 0, -w)  # as H^(G-kW)
            if self.from_table(es):
                self.bcast = {e: (self.f.bcast_power(self.ctx, e),
                                  self.f.bcast_power(self.ctx, e, folded=True)) for e in es}
            else:
                hs = [self.em.broadcast(self.f.power(self.ctx, e, 1), w) for e in es]
                self.bcast = {e: (h, gh.fold_halves(h) if gh.karatsuba else None)
                              for e, h in zip(es, hs, strict=True)}
                if mode is ENC and ("record" if extra else "seal") in \
                        params.backend.reloaded_powers:
                    self.bcast = self.reloaded(self.bcast)

    def reloaded(self, powers: dict[int, tuple[ir.Value, ir.Value | None]]
                 ) -> dict[int, tuple[Reloaded, Reloaded | None]]:
        """The loops' powers (and half-sums) stored once to a stack slot here, each multiply
        then loading its own (`Reloaded`): with 16 registers LLVM held each power in a
        register between its two multiplies and spilled it across the iteration.
        vaes_avx2's lead loop went from 232 to 216 instructions, 121 to 105 besides its AES
        and multiplies (Zen 5, same run: seal 768 B-3 KiB 0.89-0.98, 4-64 KiB 0.97-0.98).
        Not in dec (open 1.014-1.016).  On aesni_pclmul_avx the record functions' loops
        gained (gather and two-slice 1.5-16 KiB 0.95-0.96) and seal's lost (2-64 KiB
        1.02-1.05): the same source's two loops differ by 4-5% with the order LLVM gives
        them (design notes, "Zen 5, twenty-sixth session")."""
        es = list(powers)
        step = 16 * self.p.w
        with self.b.goto_entry_block():
            slot = self.b.alloca(ir.ArrayType(vec(self.p.w), 2 * len(es)))
            slot.align = step
            slot.type = ptr  # opaque pointers (llvmlite types allocas as typed ones)
        out: dict[int, tuple[Reloaded, Reloaded | None]] = {}
        for j, e in enumerate(es):
            h, hf = powers[e]
            self.em.store(h, slot, step * j)
            if hf is not None:
                self.em.store(hf, slot, step * (len(es) + j))
            out[e] = (Reloaded(self.em, slot, step * j, h.type),
                      None if hf is None else Reloaded(self.em, slot, step * (len(es) + j),
                                                       hf.type))
        return out

    def from_table(self, es: range) -> bool:
        """Whether the loops' powers ``es`` and their half-sums come from the context's
        broadcast table (`abi.CTX_BCAST`: zmm, Karatsuba).  Against computing them at entry,
        Zen 4, same run, stack offsets 2560 / 1328: seal 512 B 0.952-0.958, 1-4 KiB 0.97-0.99
        (one 0.83), 16-64 KiB 1.001-1.009; open 1-1.5 KiB 0.88-0.91, 4 KiB 0.956, 16-64 KiB
        0.98-1.005; gather 512 B-4 KiB 0.94-0.98.  The carried function's stack stores
        before its loop went from 25 zmm to 10 (its frame from 1048 bytes to 248)."""
        return (self.p.backend.masked and self.p.w == 4 and self.f.gh.karatsuba
                and all(e % 4 == 0 and e <= 4 * abi.CTX_NBCAST for e in es))

    def bcast_power(self, e: int) -> tuple[ir.Value | Reloaded, ir.Value | Reloaded | None]:
        """H^e in every lane (and its half-sum), emitted once at the top of the function; a
        higher power (a step run once, not a loop's) where it is asked for."""
        if e in self.bcast:
            return self.bcast[e]
        h = self.em.broadcast(self.f.power(self.ctx, e, 1), self.p.w)
        return h, (self.f.gh.fold_halves(h) if self.f.gh.karatsuba else None)

    def keystream(self, ctr: ir.Value, w: int, nvec: int) -> list[ir.Value]:
        """counter_blocks then aes_rounds, all at once (no interleaving)."""
        blocks = ctrs.counter_blocks(self.em, ctr, w, nvec)
        be = self.p.backend
        fresh = self.mode.hashes_output and be.vex and not be.masked
        rk = self.fresh_round_keys(w) if fresh else self.rk[w]
        return aes.aes_encrypt(self.em, self.f.prims, blocks, rk)

    def fresh_round_keys(self, w: int) -> list[ir.Value]:
        """The round keys loaded again where a leftover step uses them, not the ones the
        stitched loop holds (volatile: LLVM would merge equal loads): those then die at the
        loop's end.  enc only, AVX without masks: in vaes_avx2's enc function stack
        accesses fell from 190 to 124 and seal 1-6% (Zen 3); in dec the same change moved
        registers and open ran 10% slower; the SSE backend's enc (with `rest_vectors`) read
        4-64 KiB 1.01-1.026."""
        em = self.em
        return [em.broadcast(em.from_i128(em.load_volatile(
                    self.ctx, abi.CTX_ROUND_KEYS + 16 * r, ir.IntType(128))), w)
                for r in range(self.nr + 1)]

    def leftover(self, i, e, p, has_len, s, ctr, pending) -> list[ir.Value]:
        return list(Leftover(self, i, e, p, has_len, s, ctr, pending).run())

    def build(self) -> ir.Function:
        em, b, w, g, mode = self.em, self.b, self.p.w, self.p.g, self.mode
        if self.one_end or self.below_group:  # what the caller passes: LLVM drops the paths
            # for other lengths
            assume = em.intrinsic("llvm.assume", void, [i1])
            b.call(assume, [stitched.one_end_vector(self) if self.one_end
                            else b.icmp_unsigned("<", self.nbytes, _c(16 * g))])
        y = em.load(self.io, 0)
        ctr = em.load(self.io, 16)
        nb = b.lshr(self.nbytes, _c(4))
        p = b.and_(self.nbytes, _c(15))
        s0 = em.widen(y, w)
        split = self.p.variant.tail == "split" and not self.extra
        # Where the stitched region ends: every block (full) or a multiple of 2G (split).
        stitch_end = b.mul(b.udiv(nb, _c(2 * g)), _c(2 * g)) if split else nb
        split = split and mode.stitched
        enter = b.icmp_unsigned(">=", nb, _c(region_from(self.p, mode)))
        if split:
            enter = b.and_(enter, b.icmp_unsigned(">=", stitch_end, _c(2 * g)))
        end = stitch_end if mode.stitched else nb
        # what the region leaves in fields besides (i, s, ctr), joined with zeros where it is
        # not entered: the carried loop's pending group, a skewed enc loop's begun group
        nheld = stitched.carried_vectors(self) if self.carry else 0
        nbegun = self.p.v if mode is ENC and self.skew and not self.carry else 0
        nside = 1 if self.one_end else 0  # the end's keystream (`stitched._enc_one_group`)

        def region() -> list:
            out = mode.region(self, end, s0, ctr)
            assert len(self.pending_vectors) == nheld and len(self.begun) == nbegun
            return [*out, self.pending_vectors, self.begun, self.end_ks[:nside]]

        def skipped() -> list:
            if self.end_first:  # else after group 0 (`stitched.enc_region`)
                seal_end(self, ctr)
            return [_c(0), s0, ctr, [zero(w)] * nheld, [zero(w)] * nbegun, [zero(w)] * nside]
        i, s, c, self.pending_vectors, self.begun, self.end_ks = em.if_else_values(
            enter, region, skipped, "region")
        pending = enter if mode.stitched else None
        if split:
            y, c = em.if_else_values(
                enter, lambda: self.split_rest(i, stitch_end, nb, p, s, c, pending),
                lambda: self.leftover(i, nb, p, self.has_len, s, c, pending), "split")
        else:
            y, c = self.leftover(i, nb, p, self.has_len, s, c, pending)
        if mode.hashed is not None:
            em.store(y, self.io, 0)
        if mode.keystream:
            em.store(c, self.io, 16)
        b.ret_void()
        return self.f.fn

    def call_lead(self) -> None:
        """From lead_min blocks, the lead function takes whole lead groups up to 2G blocks
        before the end and leaves the reduced GHASH value and the counter in io; the rest of
        this function then runs on what is left, unchanged.  A separate function: with the
        lead loop in this one, the group-G loop's registers came out worse (2 more spill
        stores per iteration, 1-2 KiB seal 7% slower, 2 KiB 38% in one layout)."""
        em, b, lead, g = self.em, self.b, self.p.backend.lead_group, self.p.g
        nb = b.lshr(self.nbytes, _c(4))

        def run() -> list[ir.Value]:
            take = b.mul(b.udiv(b.sub(nb, _c(2 * g)), _c(lead)), _c(lead))  # blocks
            off = b.shl(take, _c(4))
            b.call(em.module.globals[lead_symbol(self.mode, self.nr)],
                   [self.ctx, self.io, self.inp, self.out, off, ir.Constant(i1, 0),
                    self.pub_ctr])
            pub = b.select(b.icmp_signed(">=", self.pub_ctr, _c(0)),
                           b.add(self.pub_ctr, take), _c(-1))
            return [em.gep(self.inp, off), em.gep(self.out, off), b.sub(self.nbytes, off), pub]
        self.inp, self.out, self.nbytes, self.pub_ctr = em.if_else_values(
            b.icmp_unsigned(">=", nb, _c(self.lead_min)), run,
            lambda: [self.inp, self.out, self.nbytes, self.pub_ctr], "lead")

    def call_carry(self) -> None:
        """From CARRY_MIN_GROUPS groups the whole call goes to the carried function, the same
        generator with `stitched._enc_carried` as its loop, for every output.  A function of
        its own, called only from a group up: LLVM then drops its paths for shorter inputs,
        and seal 512 B-4 KiB measured 4-6% faster than the same loop inline (Zen 5; 16-64
        KiB the same).  Below two groups the loop does not run and a function without it
        (``one_group``) takes the call: there the masked end is not sealed first, whose
        read-back would follow its store too closely (`leftover.seal_end`); for a group and one
        vector more, the one whose end vector's AES runs beside group 0 (``one_end``,
        `stitched._enc_one_group`).  Left here: what is shorter than a group."""
        b, g = self.b, self.p.g
        rest = b.append_basic_block("short")
        # (function, from how many bytes), longest first
        arms = [(carry_symbol(self.nr, self.extra), 16 * stitched.CARRY_MIN_GROUPS * g)]
        if seals_end_first(self.p):
            # a group and at most one vector (with the record form's byte): the function with
            # that vector's AES beside group 0 (`stitched._enc_one_group`)
            one = 16 * (g + self.p.w) + (0 if self.extra else 1)  # the first length past it
            arms = [(carry_symbol(self.nr, self.extra), 32 * g),
                    (carry_symbol(self.nr, self.extra, one_group=True), one),
                    (carry_symbol(self.nr, self.extra, True, one_end=True),
                     16 * g + (0 if self.extra else 1)),
                    (carry_symbol(self.nr, self.extra, one_group=True), 16 * g)]
        for sym, least in arms:
            go, other = b.append_basic_block("carry"), b.append_basic_block("fewer")
            b.cbranch(b.icmp_unsigned(">=", self.nbytes, _c(least)), go, other)
            b.position_at_end(go)
            fn = self.em.module.globals[sym]
            if self.extra:  # called aligned, the two-slice form measured 1.02-1.10x at one offset
                b.call(fn, list(self.f.args))
            else:  # its zmm spill slots lie on 64-byte boundaries from its incoming stack
                frames.aligned_call(b, fn, packed_args(b, list(self.f.args)))
            b.ret_void()
            b.position_at_end(other)
        b.branch(rest)
        b.position_at_end(rest)

    def build_lead(self) -> ir.Function:
        """The lead function: nbytes a multiple of 16 lead groups; io as for the others."""
        em, b = self.em, self.b
        s0 = em.widen(em.load(self.io, 0), self.p.w)
        _, y, c = stitched.enc_lead(self, b.lshr(self.nbytes, _c(4)), s0, em.load(self.io, 16))
        em.store(y, self.io, 0)
        em.store(c, self.io, 16)
        b.ret_void()
        return self.f.fn

    def split_rest(self, i, stitch_end, nb, p, s, c, pending) -> list[ir.Value]:
        """The split tail strategy: the leftover up to stitch_end (no partial, no length), then
        blocks [stitch_end, nb) through separate ctr and hash calls, then the partial block and
        the length block."""
        em, b, w = self.em, self.b, self.p.w
        false = ir.Constant(i1, 0)
        y1, c1 = self.leftover(i, stitch_end, _c(0), false, s, c, pending)
        em.store(y1, self.io, 0)
        em.store(c1, self.io, 16)
        mid = b.sub(nb, stitch_end)
        off = b.shl(stitch_end, _c(4))
        src, dst = em.gep(self.inp, off), em.gep(self.out, off)
        nbytes = b.shl(mid, _c(4))
        calls = [(CTR, src, dst), (HASH, dst, dst)]
        if self.mode.hashes_input:  # hash the ciphertext before in-place output overwrites it
            calls = [(HASH, src, dst), (CTR, src, dst)]
        # the public copy of the counter at block stitch_end (or still none)
        pub = b.select(b.icmp_signed(">=", self.pub_ctr, _c(0)),
                       b.add(self.pub_ctr, stitch_end), _c(-1))
        for m, a, o in calls:
            fn = em.module.globals[m.symbol(self.nr, False)]
            b.call(fn, [self.ctx, self.io, a, o, nbytes, false] + ([pub] if m.keystream else []))
        y2 = em.widen(em.load(self.io, 0), w)
        c2 = em.load(self.io, 16)
        return self.leftover(nb, nb, p, self.has_len, y2, c2, None)


def lead_symbol(mode: Mode, nr: int) -> str:
    return f"vg.bulk.{mode.name}lead.{nr}"


def carry_symbol(nr: int, extra: bool, one_group: bool = False, one_end: bool = False) -> str:
    return (f"vg.bulk.enc{'1' if extra else ''}reg{'1g' if one_group else ''}"
            f"{'e' if one_end else ''}.{nr}")


def placed_last(params: Params) -> list[str]:
    """The functions `module.generate` moves to the end of the module: the one-group
    functions with one end vector, so adding them moved no function before them."""
    if not seals_end_first(params):
        return []
    extras = (False, True) if params.backend.two_slice else (False,)
    return [carry_symbol(nr, x, True, one_end=True) for nr in NR for x in extras]


def below_symbol(mode: Mode, nr: int) -> str:
    """dec's function for less than a group (`aligned_entry`)."""
    return f"{mode.symbol(nr, False)}.below"


def body_symbol(mode: Mode, nr: int) -> str:
    """The function behind a mode's `aligned_entry`."""
    return f"{mode.symbol(nr, False)}.body"


def aligned_entry(module: ir.Module, params: Params, mode: Mode, nr: int) -> None:
    """vg.bulk.<mode>.<nr> as a call of its body with the stack 64-byte aligned, for the
    body's zmm spill slots (`frames`), or below a group of its function for that
    (`BulkFn.below_group`).  A function of its own: in the open entries the pad made every
    open pay for a frame pointer (16-64 B 1.02-1.04x, Zen 4)."""
    f = Fn(module, params, mode.symbol(nr, False), void, mode.arg_types(False))
    f.fn.attributes.add("noinline")
    args = packed_args(f.b, list(f.args))
    with f.b.if_then(f.b.icmp_unsigned("<", f.args[4], _c(16 * params.g))):
        frames.aligned_call(f.b, module.globals[below_symbol(mode, nr)], args)
        f.b.ret_void()
    # hidden from LLVM, which would specialise the body on the length's range: its loop then
    # measured 1.02-1.04x at 2-16 KiB
    args[4] = f.b.asm(ir.FunctionType(i64, [i64]), "", "=r,0", [args[4]], True)
    frames.aligned_call(f.b, module.globals[body_symbol(mode, nr)], args)
    f.b.ret_void()


def packed_args(b: ir.IRBuilder, args: list[ir.Value]) -> list[ir.Value]:
    """(ctx, io, in, out, nbytes, has_len, pub_ctr) as six arguments, the last pub_ctr * 2 +
    has_len: none goes on the stack, so the aligned call pushes nothing between its pad and
    the call."""
    *first, has_len, pub = args
    return [*first, b.or_(b.shl(pub, _c(1)), b.zext(has_len, i64))]


def unpacked(b: ir.IRBuilder, packed: ir.Value) -> tuple[ir.Value, ir.Value]:
    """(has_len, pub_ctr) from `packed_args`' last argument."""
    return b.trunc(b.and_(packed, _c(1)), i1), b.ashr(packed, _c(1))


def aligned_modes(params: Params) -> tuple[Mode, ...]:
    """The modes whose bulk function is called through `aligned_entry`, with a function of
    their own below a group: dec on AVX-512 (enc's carried function is called aligned by enc
    itself, `BulkFn.call_carry`)."""
    return (DEC,) if params.w == 4 else ()


def region_from(params: Params, mode: Mode) -> int:
    """Whole blocks from which the region is entered: the mode's min_blocks, but one group for
    dec on AVX-512, whose loop then runs zero times and whose last group (`Leftover.
    last_stitched_group`) takes 1-2 groups' text as 8 AES chains beside the GHASH, where the
    leftover's loop had run 4 per iteration: open 512-1008 B 0.90-0.985 (Zen 5, same run,
    two stack offsets).  Not on the other backends: aesni_pclmul_avx open from 1104 B read
    1.03-1.04, aesni_pclmul 272-384 B 1.01-1.02, vaes_avx2 1.00."""
    if mode is DEC and params.w == 4:
        return params.g
    return mode.min_blocks(params.g, params.variant.stitch_min)


def carries(params: Params) -> bool:
    """enc has the carried function (`Backend.enc_carry`): 32 vector registers, the loop not
    skewed, and no larger lead group."""
    return (params.backend.enc_carry and params.w >= 4 and not params.variant.skew
            and params.backend.lead_group == params.g)


def seals_end_first(params: Params) -> bool:
    """Whether enc's carried function seals its masked end beside its loop (`BulkFn.end_first`;
    the split tail's end is not where it could know it), with a function for one group beside
    it (`BulkFn.call_carry`)."""
    return (carries(params) and params.backend.masked and params.variant.tail != "split"
            and stitched.CARRY_MIN_GROUPS == 1)


def build_all(module: ir.Module, params: Params) -> None:
    """Every bulk function plus the nr-dispatching wrappers vg.bulk.<mode>."""
    BulkFn(module, params, HASH, 0).build()
    if params.backend.lead_group > params.g:
        for nr in NR:
            BulkFn(module, params, ENC, nr, lead=True).build_lead()
    for nr in NR:
        for mode in (CTR, ENC, DEC):
            if mode is ENC and carries(params):  # after ctr: the split tail calls it
                for extra in (False, True) if params.backend.two_slice else (False,):
                    BulkFn(module, params, ENC, nr, extra=extra, carry=True).build()
                    if seals_end_first(params):
                        BulkFn(module, params, ENC, nr, extra=extra, carry=True,
                               one_group=True).build()
                        BulkFn(module, params, ENC, nr, extra=extra, carry=True,
                               one_end=True).build()
            if mode in aligned_modes(params):
                BulkFn(module, params, mode, nr, below_group=True).build()
                BulkFn(module, params, mode, nr, body=True).build()
                aligned_entry(module, params, mode, nr)
            else:
                BulkFn(module, params, mode, nr).build()
    if params.backend.two_slice:
        for nr in NR:
            BulkFn(module, params, ENC, nr, extra=True).build()
    for mode in (CTR, ENC, DEC):
        f = Fn(module, params, f"vg.bulk.{mode.name}", void, [ptr, ptr, ptr, ptr, i64, i1, i64])
        args = list(f.args)

        def arm(nr, f=f, mode=mode, args=args):
            f.b.call(module.globals[mode.symbol(nr, False)], args)
        f.dispatch_nr(args[0], arm)
        f.b.ret_void()


__all__ = ["MODES", "BulkFn", "build_all", "placed_last"]
