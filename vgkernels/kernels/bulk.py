"""The stitched loop, written once for every vector width, group size and tail strategy.

``bulk.<mode>.<nr>(ctx, io, in, out, nbytes, has_len)`` processes ``nbytes`` (whole blocks,
then at most one partial block) starting from the GHASH state and counter in ``io`` and, when
``has_len``, ends with the length block in ``io``; it leaves the reduced GHASH value and the
next counter in ``io``.  io = {Y: 16 bytes, reflected; ctr: 16 bytes, LE form; len block}.

The modes with a counter take one more argument, ``pub_ctr``: the counter's low 32 bits at entry
when they are public (a 96-bit nonce: J0 = nonce || 1, so they count blocks from 2), else -1.
It alone decides the counter fast path (see ``advance``): for other nonces J0 = GHASH_H(IV)
depends on H, and a branch on its low byte would leak bits of J0 (linear in H for a 16-byte
IV); they always take the branch-free general path instead.

Modes: ``enc`` (GHASH over the output), ``dec`` (GHASH over the input), ``hash`` (GHASH only:
AAD, J0, the ghash kernel), ``ctr`` (keystream only: the ctr32 kernel, the roofline).

Inside the loop the GHASH state is a W-lane vector of W interleaved streams (lane l holds the
blocks l, l+W, l+2W, ...), multiplied by H^G, H^(G-W), ... broadcast to every lane, so the
loop-carried chain never waits for a horizontal fold.  The leftover chunk ("rest") multiplies
its first vector, the state XORed in, by the descending powers H^r .. H^(r-W+1), which puts
every stream at its true weight; it sums all products and reduces once.
"""

from __future__ import annotations

from llvmlite import ir

from ..ir import aes, partial
from ..ir import ctr as ctrs
from ..ir.core import dvec, i1, i32, i64, ptr, vec, void, zero
from ..ir.ghash import Parts
from .common import NR, Fn, Params

MODES = ("enc", "dec", "hash", "ctr")


def _c(x: int) -> ir.Constant:
    return ir.Constant(i64, x)


class Bulk:
    def __init__(self, module: ir.Module, params: Params, mode: str, nr: int,
                 extra: bool = False):
        """``extra``: the two-slice form: one more byte, passed by value, follows the nbytes of
        ``in``; the final (masked or partial) block takes it, so the last block of a TLS record
        (payload, then the content-type byte) needs no separate tail and no extra reduction."""
        self.p = params
        self.mode = mode
        self.nr = nr
        self.extra = extra
        name = f"vg.bulk.{mode}{'1' if extra else ''}" + ("" if mode == "hash" else f".{nr}")
        self.f = Fn(module, params, name, void,
                    [ptr, ptr, ptr, ptr, i64, i1] + ([i64] if mode != "hash" else [])
                    + ([ir.IntType(8)] if extra else []))
        self.f.fn.attributes.add("noinline")
        self.em, self.b = self.f.em, self.f.b
        self.ctx, self.io, self.inp, self.out, self.nbytes, self.has_len = self.f.args[:6]
        self.pub_ctr = self.f.args[6] if mode != "hash" else None
        self.extra_byte = self.f.args[-1] if extra else None
        self.aes = mode != "hash"
        self.hash = mode != "ctr"

    # -- pieces of the algorithm -----------------------------------------------------------
    def keystream(self, ctr: ir.Value, w: int, nvec: int) -> list[ir.Value]:
        """counter_blocks then aes_rounds, all at once (no interleaving)."""
        blocks = ctrs.counter_blocks(self.em, ctr, w, nvec)
        return aes.aes_encrypt(self.em, self.f.prims, blocks, self.rk[w])

    def ghash_group_steps(self, base: ir.Value, s: ir.Value, holder: list):
        """ghash_accumulate over one group at base with the broadcast powers, then reduce;
        a generator so the caller can interleave it with AES rounds."""
        em, w = self.em, self.p.w
        acc = None
        for j in range(self.p.v):
            d = em.bswap_lanes(em.load(base, 16 * w * j, w))
            if j == 0:
                d = em.xor(d, s)
            acc = self.f.gh.accumulate(acc, d, self.bcast_pows[j], self.bcast_folded[j])
            yield
        holder.append(self.f.gh.reduce(acc))
        yield

    def stitched_group(self, i: ir.Value, s: ir.Value, blocks: list[ir.Value] | None,
                       ghash_base: ir.Value | None, started: list[ir.Value] | None = None,
                       next_blocks: list[ir.Value] | None = None
                       ) -> tuple[ir.Value, list[ir.Value] | None]:
        """One iteration: AES-CTR of the group at block i (counter blocks ``blocks``),
        interleaved with GHASH of the group at ghash_base and, in a skewed loop, with the first
        rounds of the next group (``next_blocks``).  ``started`` is this group's state when an
        earlier iteration began it.  Stores the group's output; returns (new GHASH state or s,
        the next group's started state)."""
        em, b, w, v = self.em, self.b, self.p.w, self.p.v
        prims, rk, skew = self.f.prims, self.rk[w], self.skew
        off = b.shl(i, _c(4))
        pre = []
        if self.mode == "dec":  # load the ciphertext first: in-place output overwrites it
            pre = [em.load(self.inp, b.add(off, _c(16 * w * j)), w) for j in range(v)]
        if started is None:
            cur = aes.aes_rounds(em, prims, blocks, rk)
        else:
            cur = aes.aes_rounds_from(em, prims, started, rk, skew)
        nxt = (aes.aes_begin(em, prims, next_blocks, rk, skew)
               if next_blocks is not None else iter(()))
        holder: list = []
        steps = (self.ghash_group_steps(ghash_base, s, holder) if ghash_base is not None
                 else iter(()))
        ks, begun = None, None
        for ks in cur:  # noqa: B007  round-robin: a round here, a GHASH step, the next group's
            next(steps, None)
            begun = next(nxt, begun)
        for _ in steps:
            pass
        for begun in nxt:  # noqa: B007
            pass
        data = pre or [em.load(self.inp, b.add(off, _c(16 * w * j)), w) for j in range(v)]
        for j in range(v):
            em.store(b.xor(data[j], ks[j]), self.out, b.add(off, _c(16 * w * j)))
        return (holder[0] if holder else s), begun

    def advance(self, c: ir.Value, i: ir.Value, blocks: list[ir.Value]) -> list[ir.Value]:
        """counter_blocks for the group after the one at block i whose first counter is c: one
        add per vector on the big-endian blocks, without the byte swaps, while the counters' low
        byte cannot carry.  The test reads the public copy of the counter (pub_ctr + i), never
        c: with no public copy (pub_ctr < 0) every group takes the general path, so the branch
        depends on public data only."""
        em, b, w, v, g = self.em, self.b, self.p.w, self.p.v, self.p.g
        low = b.and_(b.add(self.pub_ctr, i), _c(0xFF))
        fast = b.and_(b.icmp_signed(">=", self.pub_ctr, _c(0)),
                      b.icmp_unsigned("<=", low, _c(256 - 2 * g)))
        inc = ir.Constant(dvec(w), [ir.Constant(i32, (g << 24) if k % 4 == 3 else 0)
                                    for k in range(4 * w)])
        return em.if_else_values(
            fast,
            lambda: [b.bitcast(b.add(b.bitcast(x, dvec(w)), inc), vec(w)) for x in blocks],
            lambda: ctrs.counter_blocks(em, ctrs.add(em, c, g), w, v), "ctrbe")

    def hash_group(self, i: ir.Value, s: ir.Value) -> ir.Value:
        holder: list = []
        for _ in self.ghash_group_steps(self.em.gep(self.inp, self.b.shl(i, _c(4))), s, holder):
            pass
        return holder[0]

    # -- the leftover chunk ----------------------------------------------------------------
    def rest(self, i: ir.Value, e: ir.Value, p: ir.Value, has_len: ir.Value, s: ir.Value,
             ctr: ir.Value, pending: ir.Value | None) -> tuple[ir.Value, ir.Value]:
        """Blocks [i, e), then p partial bytes, then the length block if has_len; one
        reduction.  When ``pending``: enc hashes first the G blocks before i (stored, not
        hashed yet) while the leftover's AES runs; dec takes its first G blocks as one more
        stitched group (AES interleaved with GHASH at the descending powers).
        Returns (Y, ctr)."""
        em, b, f, w, g = self.em, self.b, self.f, self.p.w, self.p.g
        gh = f.gh
        has_p = b.icmp_unsigned("!=", p, _c(0))
        if self.extra:
            has_p = ir.Constant(i1, 1)  # the extra byte always ends the text
        enc_pending = pending if self.mode == "enc" else None
        npend = b.select(enc_pending, _c(g), _c(0)) if enc_pending is not None else _c(0)
        r = b.add(b.add(npend, b.sub(e, i)), b.add(b.zext(has_p, i64), b.zext(has_len, i64)))
        acc_w, xin = gh.zero_parts(w), s
        j0 = i
        if pending is not None and self.mode == "dec":
            def stitched_last():
                off = b.shl(i, _c(4))
                data = [em.load(self.inp, b.add(off, _c(16 * w * k)), w)
                        for k in range(self.p.v)]
                rounds = aes.aes_rounds(em, f.prims, ctrs.counter_blocks(em, ctr, w, self.p.v),
                                        self.rk[w])
                acc: list = [None]

                def steps():
                    for k in range(self.p.v):
                        h = em.bswap_lanes(data[k])
                        if k == 0:
                            h = em.xor(h, s)
                        pw = f.power(self.ctx, b.sub(r, _c(k * w)), w)
                        acc[0] = gh.accumulate(acc[0], h, pw)
                        yield
                st = steps()
                ks = None
                for ks in rounds:  # noqa: B007  one GHASH step after each AES round
                    next(st, None)
                for _ in st:
                    pass
                for k in range(self.p.v):
                    em.store(b.xor(data[k], ks[k]), self.out, b.add(off, _c(16 * w * k)))
                a = acc[0]
                return [a.lo, a.mi, a.hi, zero(w), ctrs.add(em, ctr, g), b.add(i, _c(g)), _c(g)]
            lo, mi, hi, xin, ctr, j0, npend = em.if_else_values(
                pending, stitched_last, lambda: [*_parts(acc_w), s, ctr, i, _c(0)], "last")
            acc_w = Parts(lo, mi, hi)
        if enc_pending is not None:
            def hash_pending():
                base = em.gep(self.out, b.shl(b.sub(i, _c(g)), _c(4)))
                acc = None
                for j in range(self.p.v):
                    d = em.bswap_lanes(em.load(base, 16 * w * j, w))
                    if j == 0:
                        d = em.xor(d, s)
                    acc = gh.accumulate(acc, d, f.power(self.ctx, b.sub(r, _c(j * w)), w))
                return [acc.lo, acc.mi, acc.hi, zero(w)]
            lo, mi, hi, xin = em.if_else_values(
                enc_pending, hash_pending, lambda: [*_parts(acc_w), s], "pend")
            acc_w = Parts(lo, mi, hi)

        def unit(width: int, vals, load, store, nblk):
            """One vector of `width` blocks: keystream, xor, store, ghash_accumulate."""
            j, q, c, lo, mi, hi, x = vals
            acc = Parts(lo, mi, hi)
            off = b.shl(j, _c(4))
            d = load(off)
            out = d
            if self.aes:
                (ks,) = self.keystream(c, width, 1)
                out = b.xor(d, ks)
                store(off, out)
                c = ctrs.add(em, c, nblk)
            if self.hash:
                src = out if self.mode == "enc" else d
                h = em.xor(em.bswap_lanes(self.mask_tail(src)), x)
                acc = gh.accumulate(acc, h, f.power(self.ctx, b.sub(r, q), width))
                x = zero(width)
            return [b.add(j, _c(width)), b.add(q, _c(width)), c, acc.lo, acc.mi, acc.hi, x]

        def units(vals, n):
            """n whole vectors at once: their AES rounds interleave (independent chains in
            flight), then each is stored and hashed in order."""
            j, q, c, lo, mi, hi, x = vals
            acc = Parts(lo, mi, hi)
            offs = [b.shl(b.add(j, _c(k * w)), _c(4)) for k in range(n)]
            data = [em.load(self.inp, o, w) for o in offs]
            outs = data
            if self.aes:
                ks = self.keystream(c, w, n)
                outs = [b.xor(d, k) for d, k in zip(data, ks, strict=True)]
                for o, v in zip(offs, outs, strict=True):
                    em.store(v, self.out, o)
                c = ctrs.add(em, c, n * w)
            if self.hash:
                for k in range(n):
                    src = outs[k] if self.mode == "enc" else data[k]
                    h = em.bswap_lanes(src)
                    if k == 0:
                        h = em.xor(h, x)
                    pw = f.power(self.ctx, b.sub(r, b.add(q, _c(k * w))), w)
                    acc = gh.accumulate(acc, h, pw)
                x = zero(w)
            return [b.add(j, _c(n * w)), b.add(q, _c(n * w)), c, acc.lo, acc.mi, acc.hi, x]

        self.mask_tail = lambda v: v
        ld = lambda width: (lambda off: em.load(self.inp, off, width))  # noqa: E731
        st = lambda off, v: em.store(v, self.out, off)  # noqa: E731
        u = min(self.p.v, 4)  # vectors per iteration of the leftover loop
        masked = self.p.backend.masked and w > 1 and u > 1
        ctr_end = None
        if masked:
            # What the u-vector loop leaves (fewer than u vectors, the partial block, the extra
            # byte) is one straight-line piece of m vectors, the last one byte-masked.  It is
            # emitted BEFORE the loop: its AES chains then run beside the loop's instead of
            # after them (XOR is order-free; every block carries its own power).
            span = b.sub(e, j0)
            nloop = b.sub(span, b.urem(span, _c(u * w)))
            jt = b.add(j0, nloop)
            nrem_in = b.add(b.shl(b.sub(e, jt), _c(4)), p)
            nrem = b.add(nrem_in, _c(1)) if self.extra else nrem_in
            vb = 16 * w
            nvec = b.udiv(b.add(nrem, _c(vb - 1)), _c(vb))
            first_here = b.icmp_unsigned("==", nloop, _c(0))  # the tail holds block 0
            xin_t = b.select(first_here, xin, zero(w))
            # no block at all before the length block: the state goes to it
            xin_len = b.select(b.and_(first_here, b.icmp_unsigned("==", nvec, _c(0))),
                               em.lane(xin, 0), zero(1))
            xin = b.select(first_here, zero(w), xin)
            qt = b.add(npend, nloop)
            ctr_t = ctrs.add(em, ctr, b.trunc(nloop, ir.IntType(32)))
            acc0 = acc_w

            def tail(m):
                def go():
                    off_in = em.gep(self.inp, b.shl(jt, _c(4)))
                    off_out = em.gep(self.out, b.shl(jt, _c(4)))
                    data = [em.load(off_in, t * vb, w) for t in range(m - 1)]
                    last_n = b.sub(nrem_in, _c((m - 1) * vb))
                    d, mask = partial.masked_load(em, em.gep(off_in, (m - 1) * vb), last_n, w)
                    if self.extra:
                        d, mask = partial.insert_byte(em, d, mask, last_n, self.extra_byte, w)
                    data.append(d)
                    outs, c = data, ctr_t
                    if self.aes:
                        ks = self.keystream(ctr_t, w, m)
                        outs = [b.xor(x, k) for x, k in zip(data, ks, strict=True)]
                        for t in range(m - 1):
                            em.store(outs[t], off_out, t * vb)
                        partial.masked_store(em, em.gep(off_out, (m - 1) * vb), outs[-1], mask, w)
                        nblk = b.trunc(b.lshr(b.add(nrem, _c(15)), _c(4)), ir.IntType(32))
                        c = ctrs.add(em, ctr_t, nblk)
                    acc = acc0
                    if self.hash:
                        for t in range(m):
                            src = outs[t] if self.mode == "enc" else data[t]
                            if t == m - 1 and self.mode == "enc":
                                src = partial.select_bytes(em, mask, src, w)
                            h = em.bswap_lanes(src)
                            if t == 0:
                                h = em.xor(h, xin_t)
                            pw = f.power(self.ctx, b.sub(r, b.add(qt, _c(t * w))), w)
                            acc = gh.accumulate(acc, h, pw)
                    return [c, *_parts(acc)]
                return go

            def pick(m):
                if m == u:
                    return tail(m)
                return lambda: em.if_else_values(b.icmp_unsigned("==", nvec, _c(m)), tail(m),
                                                 pick(m + 1), f"mtail{m}")
            ctr_end, lo, mi, hi = em.if_else_values(
                b.icmp_unsigned("==", nvec, _c(0)), lambda: [ctr_t, *_parts(acc0)],
                pick(1), "mrem")
            acc_w = Parts(lo, mi, hi)
        vals = [j0, npend, ctr, *_parts(acc_w), xin]
        if u > 1:
            vals = em.loop("wide4", vals,
                           lambda v: b.icmp_unsigned("<=", b.add(v[0], _c(u * w)), e),
                           lambda v: units(v, u))
        if masked:
            j, q, _, lo, mi, hi, xin = vals
            ctr = ctr_end
        else:
            j, q, ctr, lo, mi, hi, xin = em.loop(
                "wide", vals,
                lambda v: b.icmp_unsigned("<=", b.add(v[0], _c(w)), e),
                lambda v: unit(w, v, ld(w), st, w))
        acc_w = Parts(lo, mi, hi)
        acc_n = gh.zero_parts(1)
        if masked:
            xn = xin_len  # else the state went to the tail or to the loop's first vector
        else:
            xn = em.lane(xin, 0) if w > 1 else xin
            j, q, ctr, lo, mi, hi, xn = em.loop(
                "narrow", [j, q, ctr, *_parts(acc_n), xn],
                lambda v: b.icmp_unsigned("<", v[0], e),
                lambda v: unit(1, v, ld(1), st, 1))
            acc_n = Parts(lo, mi, hi)

            def part():
                off = b.shl(e, _c(4))
                bits = partial.load_partial(em, em.gep(self.inp, off), p)
                pn = p
                if self.extra:  # the second slice's byte lands right after the first's tail
                    byte = b.zext(self.extra_byte, ir.IntType(128))
                    bits = b.or_(bits, b.shl(byte, b.zext(b.shl(p, _c(3)), ir.IntType(128))))
                    pn = b.add(p, _c(1))
                d = em.from_i128(bits)
                mask = em.from_i128(partial.byte_mask128(em, pn))
                self.mask_tail = lambda v: b.and_(v, mask)
                res = unit(1, [e, q, ctr, *_parts(acc_n), xn],
                           lambda off: d,
                           lambda off, v: partial.store_partial(
                               em, em.gep(self.out, off), pn, em.to_i128(v)), 1)
                self.mask_tail = lambda v: v
                return res[2:]
            ctr, lo, mi, hi, xn = em.if_else_values(
                has_p, part, lambda: [ctr, *_parts(acc_n), xn], "part")
            acc_n = Parts(lo, mi, hi)
        if not self.hash:
            return zero(1), ctr

        def length_block():
            ln = em.xor(em.load(self.io, 32), xn)
            a = gh.accumulate(acc_n, ln, f.power(self.ctx, 1, 1))
            return _parts(a)
        lo, mi, hi = em.if_else_values(has_len, length_block, lambda: _parts(acc_n), "len")
        total = gh.add(gh.fold_parts(acc_w) if w > 1 else acc_w, Parts(lo, mi, hi))
        y = gh.reduce(total)
        # nothing at all to hash (r == 0): the state passes through unchanged
        y = b.select(b.icmp_unsigned("==", r, _c(0)), em.lane(s, 0) if w > 1 else s, y)
        return y, ctr

    # -- the function ----------------------------------------------------------------------
    def build(self) -> ir.Function:
        em, b, f, w, g = self.em, self.b, self.f, self.p.w, self.p.g
        nr = self.nr
        self.skew = min(self.p.variant.skew or 0, nr - 1)
        self.rk = {}
        if self.aes:
            self.rk = {w: f.round_keys(self.ctx, nr, w)}
            if w > 1:
                self.rk[1] = f.round_keys(self.ctx, nr, 1)
        if self.hash:
            self.bcast_pows = [em.broadcast(f.power(self.ctx, g - j * w, 1), w)
                               for j in range(self.p.v)]
            self.bcast_folded = [f.gh.fold_halves(h) if f.gh.karatsuba else None
                                 for h in self.bcast_pows]
        y = em.load(self.io, 0)
        ctr = em.load(self.io, 16)
        nb = b.lshr(self.nbytes, _c(4))
        p = b.and_(self.nbytes, _c(15))
        s0 = em.widen(y, w)
        split = self.p.variant.tail == "split" and not self.extra
        sm = self.p.variant.stitch_min
        mode = self.mode
        # Where the stitched region ends: every block (full) or a multiple of 2G (split).
        stitch_end = b.mul(b.udiv(nb, _c(2 * g)), _c(2 * g)) if split else nb
        if mode == "enc":
            enter = b.icmp_unsigned(">=", nb, _c(max(sm, g)))
            if split:
                enter = b.and_(enter, b.icmp_unsigned(">=", stitch_end, _c(2 * g)))
        elif mode == "dec":
            enter = b.icmp_unsigned(">=", nb, _c(max(sm, 2 * g)))
            if split:
                enter = b.and_(enter, b.icmp_unsigned(">=", stitch_end, _c(2 * g)))
        elif mode == "hash":
            enter = b.icmp_unsigned(">=", nb, _c(2 * g))
        else:
            enter = b.icmp_unsigned(">=", nb, _c(g))
        zero_i = _c(0)

        def region():
            """Returns [i, s, ctr]: the first block the stitched loop did not take."""
            blocks0 = ctrs.counter_blocks(em, ctr, w, self.p.v)
            if mode == "enc":
                # prologue: the first group's keystream, nothing to hash yet
                skewed = self.skew > 0
                nxt1 = self.advance(ctr, zero_i, blocks0)
                s1, st1 = self.stitched_group(zero_i, s0, blocks0, None, None,
                                              nxt1 if skewed else None)
                c1 = ctrs.add(em, ctr, g)
                nv = len(nxt1)

                def body(v):
                    # blk: counter blocks of the group at i (skewed: already begun, in st)
                    i, s, c, *rest = v
                    blk, st = rest[:nv], rest[nv:]
                    base = em.gep(self.out, b.shl(b.sub(i, _c(g)), _c(4)))
                    nblk = self.advance(c, i, blk)
                    if skewed:
                        s2, st2 = self.stitched_group(i, s, None, base, st, nblk)
                    else:
                        s2, st2 = self.stitched_group(i, s, blk, base)
                    return [b.add(i, _c(g)), s2, ctrs.add(em, c, g), *nblk, *(st2 or [])]
                out = em.loop("stitch", [_c(g), s1, c1, *nxt1, *(st1 or [])],
                              lambda v: b.icmp_unsigned("<=", b.add(v[0], _c(g)), stitch_end),
                              body)
                return out[:3]
            if mode == "dec":
                def body(v):
                    i, s, c, *blk = v
                    s2, _ = self.stitched_group(i, s, blk, em.gep(self.inp, b.shl(i, _c(4))))
                    return [b.add(i, _c(g)), s2, ctrs.add(em, c, g), *self.advance(c, i, blk)]
                return em.loop("stitch", [zero_i, s0, ctr, *blocks0],
                               lambda v: b.icmp_unsigned("<=", b.add(v[0], _c(2 * g)), stitch_end),
                               body)[:3]
            if mode == "hash":
                return em.loop("ghash", [zero_i, s0, ctr],
                               lambda v: b.icmp_unsigned("<=", b.add(v[0], _c(2 * g)), nb),
                               lambda v: [b.add(v[0], _c(g)), self.hash_group(v[0], v[1]), v[2]])

            def body(v):
                i, s, c, *blk = v
                self.stitched_group(i, s, blk, None)
                return [b.add(i, _c(g)), s, ctrs.add(em, c, g), *self.advance(c, i, blk)]
            return em.loop("ctr", [zero_i, s0, ctr, *blocks0],
                           lambda v: b.icmp_unsigned("<=", b.add(v[0], _c(g)), nb), body)[:3]

        i, s, c = em.if_else_values(enter, region, lambda: [zero_i, s0, ctr], "region")
        pending = enter if mode in ("enc", "dec") else None
        false = ir.Constant(i1, 0)
        if split and mode in ("enc", "dec"):
            # "before": the stitched region ends at a multiple of 2G; the rest goes through
            # separate ctr32 and ghash calls, then the partial block and the length block.
            def split_tail():
                y1, c1 = self.rest(i, stitch_end, zero_i, false, s, c, pending)
                em.store(y1, self.io, 0)
                em.store(c1, self.io, 16)
                mid = b.sub(nb, stitch_end)
                off = b.shl(stitch_end, _c(4))
                src, dst = em.gep(self.inp, off), em.gep(self.out, off)
                nbytes = b.shl(mid, _c(4))
                calls = [("ctr", src, dst), ("hash", dst, dst)]
                if mode == "dec":  # hash the ciphertext before in-place output overwrites it
                    calls = [("hash", src, dst), ("ctr", src, dst)]
                # the public copy of the counter at block stitch_end (or still none)
                pub = b.select(b.icmp_signed(">=", self.pub_ctr, _c(0)),
                               b.add(self.pub_ctr, stitch_end), _c(-1))
                for m, a, o in calls:
                    fn = self.em.module.globals[
                        f"vg.bulk.{m}" + ("" if m == "hash" else f".{nr}")]
                    b.call(fn, [self.ctx, self.io, a, o, nbytes, false]
                           + ([] if m == "hash" else [pub]))
                y2 = em.widen(em.load(self.io, 0), w)
                c2 = em.load(self.io, 16)
                return list(self.rest(nb, nb, p, self.has_len, y2, c2, None))

            y, c = em.if_else_values(
                enter, split_tail,
                lambda: list(self.rest(i, nb, p, self.has_len, s, c, pending)), "split")
        else:
            y, c = self.rest(i, nb, p, self.has_len, s, c, pending)
        if self.hash:
            em.store(y, self.io, 0)
        if self.aes:
            em.store(c, self.io, 16)
        b.ret_void()
        return self.f.fn


def _parts(p: Parts) -> list[ir.Value]:
    return [p.lo, p.mi, p.hi]


def build_all(module: ir.Module, params: Params) -> None:
    """Every bulk function plus the nr-dispatching wrappers vg.bulk.<mode>."""
    Bulk(module, params, "hash", 0).build()
    for nr in NR:
        for mode in ("ctr", "enc", "dec"):
            Bulk(module, params, mode, nr).build()
    if params.backend.two_slice:
        for nr in NR:
            Bulk(module, params, "enc", nr, extra=True).build()
    for mode in ("ctr", "enc", "dec"):
        f = Fn(module, params, f"vg.bulk.{mode}", void, [ptr, ptr, ptr, ptr, i64, i1, i64])
        args = list(f.args)

        def arm(nr, f=f, mode=mode, args=args):
            f.b.call(module.globals[f"vg.bulk.{mode}.{nr}"], args)
        f.dispatch_nr(args[0], arm)
        f.b.ret_void()


__all__ = ["MODES", "Bulk", "build_all"]
