"""The short path: a seal or open of at most SHORT_BLOCKS blocks of text (piece_blocks: up to 19
for seal and 14 for open on vaes_avx512) with a 96-bit nonce and at most 16 bytes of AAD, as
one straight-line piece per block count.

Why a separate path: through the general one a 16-byte seal runs J0 and E(J0) (vg.setup), the
AAD (its own multiply and reduction, vg.bulk.hash), then the text and the length block
(vg.bulk.enc: another reduction), five calls and the GHASH state through memory in between.
Here everything is known at once: the counter blocks are J0 with a constant low byte (no
increment, no carry: at most 1 + SHORT_BLOCKS < 256), so E(J0) and every keystream block are
independent AES chains started together, and A, the text blocks and the length block are
hashed as one aggregated sum A*H^(m+2) + C1*H^(m+1) + .. + Cm*H^2 + L*H with one reduction.
Open on aesni_pclmul_avx hashes and reduces its ciphertext before the AES from HASH_FIRST
blocks on (``hash_first``): in program order, which is the schedule here, that frees the
registers E(J0)'s chain needs.

Width: from WIDE_FROM blocks on the VAES backends the whole blocks go two to a ymm vector
(keystream, data and their multiplies by two powers at once, summed into the one reduction);
E(J0) and the last block, which may be partial, stay one block wide (with AVX-512 masks an
even count ends in a pair instead, its last block masked).  Below that, one block wide: the
serial chain is the same and the wide set-up only adds.  Not zmm: on Zen 4 a zmm
``vaesenc`` issues once per cycle, two ymm ones do the same work.  Why 8 blocks (same-run A/B,
Zen 4): at 65-128 B this path took 0.55-0.8x the general path's time on every x86 backend; 16
blocks won at 129-256 B too but doubled the generated IR and grew the object by half.  On
vaes_avx512 they are worth it (``piece_blocks``): its general path has no medium chunk.

Medium path (unmasked x86 backends: ``medium_blocks``): 9..16 blocks (129-256 B): the first
CHUNK = 8 blocks (ymm pairs where the backend has VAES) with constant powers, reduced to S =
A*H^8 + C1*H^7 + .. + C7*H + C8, then the short path's own piece for the t blocks after them
with S in A's place (the whole sum is S*H^(t+2) + the tail's terms).  On vaes_avx2 it lives in
the same function, the pieces shared through phis (the IR grows by one chunk per round count);
on the one-block-wide backends in its own, vg.short.<mode>.medium (``separate_medium``), so the
16-128 B pieces keep their register allocation (design notes, "The medium path").

Chunks (``chunk_blocks``: seal on the one-block-wide backends and open on aesni_pclmul_avx,
seal and open on vaes_avx2): past MEDIUM_BLOCKS, up to 1024 B seal and open (AVX),
1536 B seal (SSE), or 512 B seal and open (vaes_avx2),
vg.short.<mode>.chunks loops over chunks of CHUNK blocks, each folding the sum so far into S
(S*H^CHUNK + the chunk's terms, one reduction), while more than MEDIUM_BLOCKS blocks remain,
then ends as the medium path does.  On VAES: a chunk of WIDE_CHUNK blocks (reduced) when more
than 24 blocks remain, then one chunk of 16 or 8 blocks whose unreduced sums, its blocks at
their powers in the whole message, the tail's piece takes into its one reduction (`joined`).
The general path's fixed cost (vg.setup's J0 and E(J0), the AAD's multiply, the stitched
loop's start and drain with the last group hashed alone, the state through memory) cost
30-40 ns there at 257-300 B on aesni_pclmul_avx, 10-20 ns on vaes_avx2.

Every branch is on a length (public), every address is a buffer plus a length.
"""

from __future__ import annotations

from llvmlite import ir

from .. import abi
from ..backends import Backend
from ..ir import aes, partial
from ..ir.core import Emitter, bvec, dvec, i8, i32, i64, i128, ptr, vec, zero
from ..ir.ghash import Parts
from .common import Fn, Params, copy_from_64, libc_copies, one_block_wide, within
from .modes import DEC, ENC, Mode

SHORT_BLOCKS = 8  # texts of at most 128 bytes
RECORD_COPY = "vg.short.enc.copy"
CHUNK = 8  # blocks: the medium path's first chunk
MEDIUM_BLOCKS = SHORT_BLOCKS + CHUNK  # texts of at most 256 bytes
# chunks up to 1536 bytes (SSE: seal) or 1024 (AVX: seal and open) on the one-block-wide
# backends; on VAES without masks, seal and open up to VAES_CHUNK_BLOCKS: chunk_blocks.
# Records through them as far (copied, `build_record_copy`).
CHUNK_BLOCKS = {"sse": {ENC: 96, DEC: 0}, "avx": {ENC: 64, DEC: 64}}
VAES_CHUNK_BLOCKS = {ENC: 32, DEC: 32}
WIDE_CHUNK = 16  # blocks: the chunks on VAES (8 ymm AES chains); see build_short
RECORD_PIECES = 12  # vaes_avx512: records through pieces up to 192 bytes (record_pieces)
# vaes_avx512: records of these block counts take the stitched record path (record_stitched)
RECORD_STITCHED = (15, 16)
MASKED_PIECES = {ENC: 19, DEC: 19}  # vaes_avx512: pieces up to 304 bytes (piece_blocks)
LONG_OPEN = 12  # blocks: vaes_avx512's open pieces from here in vg.short.dec.long (long_opens)
HASH_FIRST = 4  # blocks: aesni_pclmul_avx's open pieces from here hash first (hash_first)
HASH_FIRST_ONE = frozenset({"znver5"})  # LLVM CPUs where its one-block piece does too
NARROW_BLOCKS = 2  # vaes_avx512: texts of 1..2 blocks in vg.short.<mode>.narrow (narrow_texts)
RECORD_CC = "preserve_nonecc"  # vaes_avx512: vg.short.enc.byte's convention (record_registers)
WIDE = 2  # blocks per vector (ymm) where the backend has VAES
WIDE_FROM = 3  # blocks: from here whole blocks go WIDE to a vector
MAX_AAD = 16


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
        v = b.insert_element(v, em.load_volatile(nonce, 4 * k, i32), ir.Constant(i32, k))
    return v


def counter_block(em: Emitter, nv: ir.Value, c: int, counted: bool = False) -> ir.Value:
    """nonce || [c]_32 (big-endian, c < 256: only byte 15 is set).  ``counted``: nv may
    already hold a block count in byte 15 (the medium path's tail), so c is added (no sum
    reaches 256)."""
    top = ir.Constant(dvec(1), [ir.Constant(i32, x) for x in (0, 0, 0, c << 24)])
    return em.b.bitcast((em.b.add if counted else em.b.or_)(nv, top), vec(1))


def counter_vector(em: Emitter, nv: ir.Value, c: int, w: int, counted: bool = False
                   ) -> ir.Value:
    """w counter blocks nonce || [c + l]_32 for lanes l = 0 .. w-1 (c + w <= 256);
    ``counted`` as for counter_block."""
    top = ir.Constant(dvec(w), [ir.Constant(i32, x) for lane in range(w)
                                for x in (0, 0, 0, (c + lane) << 24)])
    op = em.b.add if counted else em.b.or_
    return em.b.bitcast(op(em.b.bitcast(em.broadcast(em.b.bitcast(nv, vec(1)), w), dvec(w)), top),
                        vec(w))


def load_upto16(fn: Fn, p: ir.Value, n: ir.Value, vector: bool = True) -> ir.Value:
    """n (0..16) bytes at p, zero padded, never reading past them (``vector``: through
    vector registers where the backend has `vector_partials`; with AVX-512 a byte-masked
    load).  A whole block is a plain load on every backend: against the masked load and store
    for every n, vaes_avx512 open 1-16 B measured 0.955-0.96, 17-304 B 0.96-0.98, seal 1-32 B
    0.95-0.98 (Zen 5, same run)."""
    em, b = fn.em, fn.b
    vector = vector and fn.params.backend.vector_partials
    part = ((lambda: [partial.masked_load(em, p, n, 1)[0]]) if fn.params.backend.masked
            else (lambda: [partial.load_block(em, p, n, vector)]))
    (v,) = em.if_else_values(b.icmp_unsigned("==", n, ir.Constant(i64, 16)),
                             lambda: [em.load(p)], part, "ld16")
    return v


def with_byte(fn: Fn, v: ir.Value, at: ir.Value, byte: ir.Value) -> ir.Value:
    """v (zero from byte ``at`` on, at in 0..16) with ``byte`` at position ``at``; a zero byte
    leaves v as it is, so at = 16 takes byte = 0 (the shift is reduced mod 16: never poison)."""
    em, b = fn.em, fn.b
    if fn.params.backend.vector_partials:  # the byte broadcast, kept in the lane `at` picks
        lanes = bvec(1)
        lane = b.icmp_unsigned("==", partial.splat_byte(em, b.trunc(at, i8)),
                               ir.Constant(lanes, list(range(16))))
        put = b.and_(b.sext(lane, lanes), partial.splat_byte(em, byte))
        return b.bitcast(b.or_(b.bitcast(v, lanes), put), vec(1))
    sh = b.zext(b.shl(b.and_(at, ir.Constant(i64, 15)), ir.Constant(i64, 3)), i128)
    return em.from_i128(b.or_(em.to_i128(v), b.shl(b.zext(byte, i128), sh)))


def masked_with_byte(em: Emitter, p: ir.Value, n: ir.Value, byte: ir.Value, w: int) -> ir.Value:
    """(AVX-512) n bytes at p then ``byte`` (a zero byte changes nothing), zero padded: the
    byte by a masked broadcast, not through general registers as with_byte."""
    d, m0 = partial.masked_load(em, p, n, w)
    return partial.insert_byte(em, d, m0, n, byte, w)[0]


def store_upto16(fn: Fn, p: ir.Value, n: ir.Value, v: ir.Value) -> None:
    """The low n (0..16) bytes of v at p: a whole block plainly (see load_upto16)."""
    em, b = fn.em, fn.b
    def whole():
        em.store(v, p)
        return []

    def part():
        if fn.params.backend.masked:
            partial.masked_store(em, p, v, partial.mask_bits(em, n, 1), 1)
            return []
        partial.store_block(em, p, n, v, fn.params.backend.vector_partials)
        return []
    em.if_else_values(b.icmp_unsigned("==", n, ir.Constant(i64, 16)), whole, part, "st16")


def symbol(mode: Mode, extra: bool = False, medium: bool = False, long: bool = False,
           chunks: bool = False, narrow: bool = False) -> str:
    return (f"vg.short.{mode.name}" + (".byte" if extra else "") + (".medium" if medium else "")
            + (".long" if long else "") + (".chunks" if chunks else "")
            + (".narrow" if narrow else ""))


def build_short(module: ir.Module, params: Params, mode: Mode, extra: bool = False,
                medium_only: bool = False, long_only: bool = False,
                chunks_only: bool = False, narrow_only: bool = False) -> None:
    """vg.short.<mode>(ctx, nonce, aad, aad_len, in, out, len) -> the full 16-byte tag (memory
    order).  The caller checks the shape: nonce of 12 bytes, aad_len <= MAX_AAD, len <=
    16 * medium_blocks(params).

    ``extra``: vg.short.<mode>.byte(ctx, nonce, aad, aad_len, in, out, len0, byte, nb), the
    record shape: len0 bytes at ``in`` then nb (0 or 1) more, ``byte`` (0 when nb is 0), passed
    by value.  The byte goes into the last block's register (after the len0 - 16(m-1) bytes read
    from ``in``): the text of two pieces is sealed where it lies, with no copy to assemble it
    and no store-to-load forwarding stall on the assembled block.  The caller checks
    len0 + nb <= 16 * SHORT_BLOCKS (the sizes past it: call_record).

    The medium path (SHORT_BLOCKS < blocks <= MEDIUM_BLOCKS, where ``medium_blocks`` allows
    it): the first CHUNK blocks (`chunk`), then the piece of the t blocks after them, the
    same code as the short path's t-block piece: one switch on the block count sends 0..8 to
    the pieces and 9..16 to the chunk, which goes on to piece t; the pieces take their input,
    output, counter base, length and A through phis.

    ``medium_only``: vg.short.<mode>.medium, the same function for 9..16 blocks only, where
    the medium path is its own function (``separate_medium``).

    ``chunks_only``: vg.short.<mode>.chunks, past MEDIUM_BLOCKS (up to ``chunk_blocks``): a
    loop of chunks while more than MEDIUM_BLOCKS blocks remain after one, then the medium path's
    chunk and tail piece, in its own function (a loop inside vg.short.<mode>.medium gave its
    9-16 block pieces other registers: 144 B 7% slower).

    ``long_only`` (with ``extra``): vg.short.enc.byte.long, the pieces past SHORT_BLOCKS only,
    where piece_blocks allows them: records of 129 .. 16 * record_pieces bytes, in their own
    function so vg.short.enc.byte's 0..8-block pieces keep their registers.  Without ``extra``
    (`long_opens`): vg.short.dec.long, open's pieces from LONG_OPEN blocks, which the caller
    picks by the length (`call`); vg.short.dec keeps the shorter ones.

    ``narrow_only``: vg.short.<mode>.narrow, the pieces of 1..NARROW_BLOCKS blocks only, which
    use no vector wider than xmm, where the caller picks it by the length (`narrow_texts`)."""
    args = [ptr, ptr, ptr, i64, ptr, ptr, i64] + ([i8, i64] if extra else [])
    f = Fn(module, params, symbol(mode, extra, medium_only, long_only, chunks_only, narrow_only),
           vec(1), args)
    if one_block_wide(params.backend):
        # the allocator reloads a round key where it would spill an AES state
        # (Fn.reloadable_keys).  The 16 registers hold 11 round keys at AES-128, so pieces of
        # 5-8 blocks spilled their states round by round (seal 96-128 B: 32-46 stack
        # accesses per piece, now 4-6).
        # Same-run A/B, Zen 3, two stack offsets, aesni_pclmul_avx: seal 96-128 B
        # 0.81-0.85x, 240-256 B 0.85-0.87x, 368-640 B 0.88-0.94x; records (gather n + 1)
        # 80-127 B 0.79-0.90x; open 144-368 B 0.90-0.98x.  aesni_pclmul: seal 64-128 B
        # 0.91-0.94x, records 80-128 B 0.92-0.96x, open 112-128 B 1.02-1.04x.  Not on
        # vaes_avx2 (no gain; open 96-128 B 1.09-1.11x at one offset).
        f.reloadable_keys()
    if extra and record_registers(params.backend):
        f.fn.calling_convention = RECORD_CC
    if long_only or narrow_only:
        f.fn.attributes.add("noinline")  # inlined, it would reallocate its caller
    em, b, gh = f.em, f.b, f.gh
    ctx, nonce, aad, al, inp, out, ln = f.args[:7]
    c = lambda x: ir.Constant(i64, x)  # noqa: E731
    if extra:
        byte, nb = f.args[7:]
        ln = b.add(ln, nb)  # the text's length: the last block holds the byte
    nv = nonce_block(em, nonce)

    def first_round_chunk(nr: int, done, nvec: int, w: int) -> list[ir.Value]:
        """A chunk's keystream, the counters' first round from the key's table
        (`abi.CTX_ROUND1`): the nonce block's (its counter bytes zero) XOR the entries of the
        counters' last bytes, done + 2 on, done the blocks before the chunk (no carry: at
        most 2 + chunk_blocks < 256).  The index comes from lengths (general registers),
        not from the counter vector: the static constant-time check takes an address
        computed from a vector register as secret.
        Only for chunks of CHUNK vectors or more: on vaes_avx2 the medium path's chunk of 4
        ymm vectors measured 1.01-1.04x (its time is the chain's latency, and the table
        adds an XOR to it)."""
        rk1, rkw = f.round_keys(ctx, 1, 1), f.round_keys(ctx, nr, w)
        base = em.broadcast(aes.first_round(em, f.prims, [b.bitcast(nv, vec(1))], rk1)[0], w)
        at = b.add(c(abi.CTX_ROUND1 + 32), b.shl(done, c(4)))
        states = [b.xor(base, em.load(ctx, b.add(at, c(16 * w * v)), w)) for v in range(nvec)]
        ks = states
        for ks in aes.aes_rounds_from(em, f.prims, states, rkw, 1):  # noqa: B007
            pass
        return ks

    a = em.bswap_lanes(load_upto16(f, aad, al))
    lens = b.insert_element(zero(1), b.shl(ln, c(3)), ir.Constant(i32, 0))
    lens = b.insert_element(lens, b.shl(al, c(3)), ir.Constant(i32, 1))
    nblk = b.lshr(b.add(ln, c(15)), c(4))
    pieces = (SHORT_BLOCKS if not long_only else record_pieces(params)) if extra \
        else piece_blocks(params.backend, mode)
    first = SHORT_BLOCKS + 1 if long_only else 0
    long_open = not extra and long_opens(params.backend, mode)
    if long_open and long_only:
        first = LONG_OPEN
    elif long_open:
        pieces = LONG_OPEN - 1
    if narrow_only:
        first, pieces = 1, NARROW_BLOCKS
    tail_only = medium_only or chunks_only  # the pieces only the chunks reach
    # VAES: chunks of WIDE_CHUNK blocks (8 ymm AES chains; one of CHUNK has 4), the one
    # before the tail's piece joining its sums to the piece's (`chunk`): no loop, 2 * WIDE_CHUNK
    # blocks at most
    joined = chunks_only and _wide_unmasked(params.backend)
    medium = tail_only or (not extra and not long_open and not narrow_only
                           and medium_blocks(params, mode) > pieces and not separate_medium(params))

    def chunk(nr: int, cin, cout, nvc, lc, a, nc, size: int = CHUNK,
              joined: bool = False) -> list:
        """One chunk of ``size`` blocks (all whole), at cin with counters from nvc + 2 and nc
        blocks from here on.  With t blocks after it, A is at H^(size+t+2) and block k at
        H^(size+t+1-k), so the sum is S*H^(t+2) + (the rest's terms) with
        S = A*H^size + C1*H^(size-1) + .. + C(size-1)*H + C(size): S, reduced, takes A's
        place in what follows (another chunk, or the tail's piece), and the chunk's powers are
        constants.  Returns the rest's (in, out, counter base, length, A) and its block
        count.

        ``joined``: the chunk before the tail's piece, not reduced: A and its blocks at their
        powers in the whole message (H^(size+t+2) .. H^(t+2), loaded by t), the sums handed
        to the piece (`piece`'s ``pre``) for its one reduction; returns (in, out, counter
        base, length, the sums' lo, mi, hi) and the tail's block count t."""
        w = WIDE if params.backend.width >= WIDE else 1
        if params.backend.first_round and size // w >= CHUNK:
            ks = first_round_chunk(nr, b.sub(nblk, nc), size // w, w)
        else:
            ks = aes.aes_encrypt(em, f.prims, [counter_vector(em, nvc, 2 + w * v, w, chunks_only)
                                               for v in range(size // w)],
                                 f.round_keys(ctx, nr, w))
        t = b.sub(nc, c(size)) if joined else None  # the tail's blocks

        def power(e: int, width: int) -> ir.Value:  # H^e in S's terms; joined: in the message's
            return f.power(ctx, b.add(t, c(e + 2)) if t is not None else e, width)
        acc = gh.accumulate(None, a, power(size, 1))
        accw, hv = None, None
        for v in range(size // w):
            d = em.load(cin, 16 * w * v, w)
            o = b.xor(d, ks[v])
            em.store(o, cout, 16 * w * v)
            hv = em.bswap_lanes(mode.hashed_value(d, o))
            if joined or size - 1 - w * v:  # else the last block is added unmultiplied, after
                # the reduction (a vector's powers from H^1 run into the zero padding: its last
                # lane adds 0)
                accw = gh.accumulate(accw, hv, power(size - 1 - w * v, w))
        assert accw is not None and hv is not None
        acc = gh.add(acc, gh.fold_parts(accw) if w > 1 else accw)
        if t is None:
            state = em.xor(gh.reduce(acc), em.lane(hv, w - 1) if w > 1 else hv)
        nvt = b.add(nvc, ir.Constant(dvec(1), [ir.Constant(i32, x)
                                               for x in (0, 0, 0, size << 24)]))
        rest = [em.gep(cin, 16 * size), em.gep(cout, 16 * size), nvt, b.sub(lc, c(16 * size))]
        if t is not None:
            return [*rest, acc.lo, acc.mi, acc.hi, t]
        return [*rest, state, b.sub(nc, c(size))]

    def piece(nr: int, m: int, tin, tout, nvt, lt, a, pre: Parts | None = None) -> None:
        """m blocks of text at tin (the last one 1..16 bytes; lt bytes in all), counters from
        nvt + 2: a at H^(m+2), block k at H^(m+1-k), then the length block; nr rounds."""
        w = WIDE if params.backend.width >= WIDE and m >= WIDE_FROM else 1
        # with masks, an even count ends in a pair whose last block may be partial (masked
        # load and store): one multiply of two blocks instead of two of one
        masked_end = params.backend.masked and w > 1 and m % w == 0
        whole = m - 1 if m else 0  # else the last block may be partial: one block wide
        pairs = (m if masked_end else whole) // w if w > 1 else 0  # vectors from block 0
        singles = list(range(w * pairs, m))  # blocks one block wide (the last among them)
        rks1 = f.round_keys(ctx, nr, 1, keys_where_used(params.backend, mode))
        first_hash = hash_first(params, mode, m, tail_only)  # open's text before the AES
        pair_text = []  # first_hash: the pairs' text, XORed and stored after the AES

        def keystream() -> tuple[ir.Value, dict, list]:
            ys = aes.aes_encrypt(em, f.prims, [counter_block(em, nv, 1)]
                                 + [counter_block(em, nvt, 2 + k, medium) for k in singles], rks1)
            ksw = []
            if pairs:
                ksw = aes.aes_encrypt(em, f.prims, [counter_vector(em, nvt, 2 + w * v, w, medium)
                                                    for v in range(pairs)],
                                      f.round_keys(ctx, nr, w))
            return ys[0], dict(zip(singles, ys[1:], strict=True)), ksw
        if not first_hash:
            ej0, ks1, ksw = keystream()
        # pre: a joined chunk's unreduced sums, which hold A's term (a is None then)
        acc = pre if a is None else gh.accumulate(pre, a, f.power(ctx, m + 2, 1))
        accw = None
        for v in range(pairs):  # blocks w*v .. w*v + w - 1 at H^(m+1-wv) downwards
            off = 16 * w * v
            if masked_end and v == pairs - 1:
                src, dst, n = em.gep(tin, off), em.gep(tout, off), b.sub(lt, c(off))
                if extra:  # the text's last byte is the record's byte
                    d = masked_with_byte(em, src, b.sub(n, nb), byte, w)
                    mask = partial.mask_bits(em, n, w)
                else:
                    d, mask = partial.masked_load(em, src, n, w)
                if first_hash:
                    pair_text.append((v, d, dst, mask))
                    accw = gh.accumulate(accw, em.bswap_lanes(d), f.power(ctx, m + 1 - w * v, w))
                    continue
                o = b.xor(d, ksw[v])
                partial.masked_store(em, dst, o, mask, w)
                if mode.hashes_output:  # the keystream past the text is not ciphertext
                    o = partial.select_bytes(em, mask, o, w)
            else:
                d = em.load(tin, off, w)
                if first_hash:
                    pair_text.append((v, d, em.gep(tout, off), None))
                    accw = gh.accumulate(accw, em.bswap_lanes(d), f.power(ctx, m + 1 - w * v, w))
                    continue
                o = b.xor(d, ksw[v])
                em.store(o, tout, off)
            accw = gh.accumulate(accw, em.bswap_lanes(mode.hashed_value(d, o)),
                                 f.power(ctx, m + 1 - w * v, w))
        if accw is not None:
            acc = gh.add(acc, gh.fold_parts(accw))
        if m:
            last_n = b.sub(lt, c(16 * (m - 1)))
        def store_text(k: int, dst: ir.Value, o: ir.Value) -> None:
            """Block k of the output: whole, or the last block's 1..16 bytes."""
            if k < m - 1:
                em.store(o, dst)
            else:
                store_upto16(f, dst, last_n, o)

        singles_text = []
        for k in singles:
            src, dst = em.gep(tin, 16 * k), em.gep(tout, 16 * k)
            if k < m - 1:
                d = em.load(src)
            elif extra and params.backend.masked:
                d = masked_with_byte(em, src, b.sub(last_n, nb), byte, 1)
            elif extra:
                d = with_byte(f, load_upto16(f, src, b.sub(last_n, nb)), b.sub(last_n, nb),
                              byte)
            else:
                d = load_upto16(f, src, last_n)
            if first_hash:
                singles_text.append((k, d, dst))
                acc = gh.accumulate(acc, em.bswap_lanes(d), f.power(ctx, m + 1 - k, 1))
                continue
            o = b.xor(d, ks1[k])
            store_text(k, dst, o)
            if k == m - 1 and mode.hashes_output:  # the keystream past the text is not
                # ciphertext; masked in the vector domain: the mask (from a length) is ready
                # early, the ciphertext is on the tag's critical path
                o = b.and_(o, partial.byte_mask(em, last_n))
            acc = gh.accumulate(acc, em.bswap_lanes(mode.hashed_value(d, o)),
                                f.power(ctx, m + 1 - k, 1))
        if first_hash:
            acc = gh.accumulate(acc, lens, f.power(ctx, 1, 1))
            tag = em.bswap_lanes(gh.reduce(acc))
            ej0, ks1, ksw = keystream()
            for v, d, dst, mask in pair_text:
                if mask is None:
                    em.store(b.xor(d, ksw[v]), dst)
                else:
                    partial.masked_store(em, dst, b.xor(d, ksw[v]), mask, w)
            for k, d, dst in singles_text:
                store_text(k, dst, b.xor(d, ks1[k]))
            b.ret(em.xor(tag, ej0))
            return
        acc = gh.accumulate(acc, lens, f.power(ctx, 1, 1))
        b.ret(em.xor(em.bswap_lanes(gh.reduce(acc)), ej0))

    fail = b.append_basic_block("nr.none")
    longer = None  # vg.short.enc.byte: the block counts vg.short.enc.byte.long takes
    if extra and not long_only and long_records(params):
        longer = b.append_basic_block("long")
        with b.goto_block(longer):  # a sibling call: the jump table's entry, no extra branch
            b.ret(b.call(module.globals[symbol(mode, extra=True, long=True)], f.args,
                         tail=True))

    def arm(nr: int) -> None:
        """One straight-line piece per block count, each returning; with the medium path the
        switch also sends SHORT_BLOCKS + 1 .. MEDIUM_BLOCKS blocks to the chunk (emitted after
        the pieces), whose values reach pieces 1 .. MEDIUM_BLOCKS - CHUNK through phis."""
        swm = b.switch(nblk, fail)
        entry, phis = b.block, {}
        if longer is not None:
            for m in range(SHORT_BLOCKS + 1, record_pieces(params) + 1):
                swm.add_case(ir.Constant(i64, m), longer)
        for m in range(first, pieces + 1):
            if tail_only and not 1 <= m <= MEDIUM_BLOCKS - CHUNK:
                continue  # the pieces only the chunk reaches
            pb = b.append_basic_block(f"nr{nr}.m{m}")
            if not tail_only:
                swm.add_case(ir.Constant(i64, m), pb)
            b.position_at_end(pb)
            args = [inp, out, nv, ln, a]
            if joined:  # in, out, counter base, length and the joined chunk's sums
                args = [inp, out, nv, ln, a, a, a]
            if medium and 1 <= m <= MEDIUM_BLOCKS - CHUNK:
                args = [b.phi(v.type, name=f"t{k}") for k, v in enumerate(args)]
                if not tail_only:
                    for phi, v in zip(args, [inp, out, nv, ln, a], strict=True):
                        phi.add_incoming(v, entry)
                phis[m] = (pb, args)
            if joined:
                piece(nr, m, *args[:4], None, Parts(*args[4:]))
            else:
                piece(nr, m, *args)
        if medium:
            def to_piece(vals: list) -> None:
                """A chunk's values to the tail's piece, which one switch on its count picks."""
                *vals, tn = vals
                sw = b.switch(tn, fail)
                for m, (pb, args) in phis.items():
                    sw.add_case(ir.Constant(i64, m), pb)
                    for phi, v in zip(args, vals, strict=True):
                        phi.add_incoming(v, b.block)

            def last_chunk(vals_in: list) -> None:
                """The chunk before the tail's piece."""
                to_piece(chunk(nr, *vals_in))
            start = [inp, out, nv, ln, a, nblk]
            if joined:
                top = chunk_blocks(params.backend, mode)
                tail = MEDIUM_BLOCKS - CHUNK
                assert top <= 2 * WIDE_CHUNK
                j16 = b.append_basic_block(f"nr{nr}.joined")
                for m in range(MEDIUM_BLOCKS + 1, min(top, WIDE_CHUNK + tail) + 1):
                    swm.add_case(ir.Constant(i64, m), j16)
                b.position_at_end(j16)
                to_piece(chunk(nr, *start, size=WIDE_CHUNK, joined=True))
                if top > WIDE_CHUNK + tail:  # one reduced chunk of 16, then the medium's 8
                    red = b.append_basic_block(f"nr{nr}.reduced")
                    for m in range(WIDE_CHUNK + tail + 1, top + 1):
                        swm.add_case(ir.Constant(i64, m), red)
                    b.position_at_end(red)
                    vals = chunk(nr, *start, size=WIDE_CHUNK)
                    to_piece(chunk(nr, *vals, size=CHUNK, joined=True))
            elif not chunks_only:
                cb = b.append_basic_block(f"nr{nr}.chunk")
                for m in range(SHORT_BLOCKS + 1, MEDIUM_BLOCKS + 1):
                    swm.add_case(ir.Constant(i64, m), cb)
                b.position_at_end(cb)
                last_chunk(start)
            else:
                # the counters add block counts to the last byte only (counter_vector)
                assert 2 + chunk_blocks(params.backend, mode) < 256
                pre = b.append_basic_block(f"nr{nr}.chunks")  # one edge into the loop's phis
                for m in range(MEDIUM_BLOCKS + 1, chunk_blocks(params.backend, mode) + 1):
                    swm.add_case(ir.Constant(i64, m), pre)
                lb = b.append_basic_block(f"nr{nr}.chunkloop")
                b.position_at_end(pre)
                b.branch(lb)
                b.position_at_end(lb)
                carried = [b.phi(v.type, name=f"c{k}") for k, v in enumerate(start)]
                for phi, v in zip(carried, start, strict=True):
                    phi.add_incoming(v, pre)
                vals = chunk(nr, *carried)
                after = b.append_basic_block(f"nr{nr}.chunklast")
                b.cbranch(b.icmp_unsigned(">", vals[-1], c(MEDIUM_BLOCKS)), lb, after)
                for phi, v in zip(carried, vals, strict=True):
                    phi.add_incoming(v, b.block)
                b.position_at_end(after)
                last_chunk(vals)
    f.dispatch_nr(ctx, arm)
    b.branch(fail)
    b.position_at_end(fail)  # a context key_init did not finish, or a caller's shape error
    b.ret(zero(1))


def build_record_copy(module: ir.Module, params: Params) -> None:
    """vg.short.enc.copy, vg.short.enc.byte's arguments, for the records past record_pieces
    blocks: the piece (len0 >= 16 * record_pieces bytes) and the byte copied into the output,
    then vg.short.enc there.  The medium path has no record form; the stitched record path
    measured 1.10-1.18x copy + in-place seal at 129-255 B (vaes_avx2).  On vaes_avx512, past
    the pieces with the byte (RECORD_PIECES), pieces with the byte up to 19 blocks instead
    measured 1.01-1.07x this copy at 13-16 blocks and the same at 17-19, with 2.8 times the
    code (Zen 4, same run).  Its own function, so vg.short.enc.byte's
    code stays as it was (a branch in it reallocated its registers: +3-8% at 64-128 B).
    Without VEX (the SSE and portable backends) the piece goes through libc (`libc_copies`).
    On the SSE backend, against its own copy, same run, Zen 5: gather n + 1
    207-767 B 0.96-0.98x (it had measured 1.01-1.03x copy + in-place seal, whose copy is the
    caller's memcpy; memmove and memcpy measured the same).  Not on AVX: aesni_pclmul_avx
    1.00-1.04x, vaes_avx2 up to 1.18x (300 B)."""
    f = Fn(module, params, RECORD_COPY, vec(1), [ptr, ptr, ptr, i64, ptr, ptr, i64, i8, i64])
    f.fn.attributes.add("noinline")
    em, b = f.em, f.b
    ctx, nonce, aad, al, inp, out, n0, byte, nb = f.args
    if libc_copies(params.backend):
        em.memmove(out, inp, n0)
    else:
        copy_from_64(em, inp, n0, out)
    with b.if_then(b.icmp_unsigned("!=", nb, ir.Constant(i64, 0))):
        em.store_int(byte, out, n0)
    args = [ctx, nonce, aad, al, out, out, b.add(n0, nb)]
    if chunk_blocks(params.backend):
        with b.if_then(b.icmp_unsigned(">", args[-1], ir.Constant(i64, 16 * MEDIUM_BLOCKS))):
            b.ret(b.call(module.globals[symbol(ENC, chunks=True)], args, tail=True))
    b.ret(b.call(module.globals[symbol(ENC, medium=separate_medium(params))], args, tail=True))


def call_record(fn: Fn, args: list, total: ir.Value, stitched: ir.Block) -> ir.Value:
    """vg.short.enc.byte(args) for a record of ``total`` bytes the caller checked with
    fits(..., medium_blocks); past record_pieces blocks, vg.short.enc.copy (the same
    arguments) instead, or a branch to ``stitched`` (the stitched record path) for the block
    counts of record_stitched: that check only past the pieces, so the records the pieces take
    see no more than one length compare.  (Where the pieces go further than SHORT_BLOCKS,
    vg.short.enc.byte hands those sizes to vg.short.enc.byte.long itself.)"""
    em, b = fn.em, fn.b
    module = b.module
    record = module.globals[symbol(ENC, extra=True)]
    upto = record_pieces(fn.params)
    if medium_blocks(fn.params) <= upto:
        return b.call(record, args)

    def copied() -> list[ir.Value]:
        if (r := record_stitched(fn.params)) is not None:  # lo..hi blocks of text
            inside = within(b, total, 16 * (r[0] - 1) + 1, 16 * (r[1] - r[0] + 1))
            go_on = b.append_basic_block("rcopy.go")
            b.cbranch(inside, stitched, go_on)
            b.position_at_end(go_on)
        return [b.call(module.globals[RECORD_COPY], args)]
    (t,) = em.if_else_values(b.icmp_unsigned(">", total, ir.Constant(i64, 16 * upto)),
                             copied, lambda: [b.call(record, args)], "medium")
    return t


def medium_blocks(params: Params, mode: Mode = ENC) -> int:
    """The most blocks of text vg.short.<mode> (with vg.short.<mode>.medium) takes:
    MEDIUM_BLOCKS on the unmasked x86 backends (records past SHORT_BLOCKS go through
    vg.short.enc.copy), else piece_blocks.  Why (same-run A/B, Zen 4, design notes "The
    medium path"): on vaes_avx512 the chunk lost to the general path's masked end at 192-256 B
    (1.10-1.26x); longer pieces do not."""
    be = params.backend
    if be.masked or be.prims != "x86":
        return piece_blocks(params.backend, mode)
    return max(MEDIUM_BLOCKS, chunk_blocks(params.backend, mode))


def chunk_blocks(backend: Backend, mode: Mode = ENC) -> int:
    """The most blocks vg.short.<mode>.chunks takes (0: no such function): CHUNK_BLOCKS for
    seal on the one-block-wide x86 backends, where the general path's fixed cost is largest.
    Why (same-run A/B, Zen 4, design notes "Chunks past 256 bytes"): against the general path
    the chunks took 0.70-0.76x at 257-300 B and 0.92-1.00x at 576-640 B on aesni_pclmul_avx
    (1.04x at 768 B), 0.67x at 257 B and 0.96-0.99x at 2-4 KiB on aesni_pclmul.  Open on
    aesni_pclmul_avx as far as seal, since the chunks take their first round from
    the table (before it, open stopped at 240 B: the general dec's two stitched groups were
    1.12x faster than the chunk at 256 B): against that, same run, Zen 3, open 241-336 B
    0.83-0.91x, 352-368 B 0.94-0.96x; 384-640 B measured 1.05-1.11x then, so open stopped at
    368 B.  With the round keys reloaded instead of states spilled (see build_short) the
    chunks reach 640 B as seal's: against 368, same run, Zen 3, two offsets, open 369-640 B
    0.82-0.97x, 641-768 B 1.00x.  Not open on the SSE backend (not measured).
    Later, on Zen 4 (design notes "Zen 4, sixteenth session"), against the general path
    past 640 B, same run, two stack offsets: seal 656-1023 B 0.85-0.91x, 1024-1280 B
    0.92-0.97x, 1536 B 0.98-0.99x, 1552-1792 B 0.98-1.02x; open 656-800 B 0.94-0.97x,
    816-1008 B 0.95-1.01x, 1024 B 1.02x.  The general path costs 5-13 ns more for a partial
    block than for the whole group before it, so each limit sits where the step from the
    chunks' last length to the general path's next is smallest: seal 1728 -> 1729 B +2.3%
    (at 1648 it was +4.6%), open 1024 -> 1025 B +2.8% (at 1008, +12.6 ns).
    On Zen 5 (design notes "Zen 5, twenty-fourth session") the general path had gained:
    against it, same run, seal on aesni_pclmul_avx 1025-1728 B 0.93-0.99x the chunks
    (1024 -> 1025 B +1.8% now), 641-1023 B 1.01-1.08x, so seal stops at 1024 B as open does;
    on aesni_pclmul 1537-2560 B 0.93-0.97x, 1023-1535 B 0.995-1.055x (partial last blocks;
    whole ones 0.95-0.98x), so it stops at 1536 B (1536 -> 1537 B: -2%).  Records follow
    (`build_record_copy`): on aesni_pclmul the stitched record path measured 1.02-1.16x copy
    + chunks at 300-767 B, 0.89-0.94x at 1.3-2 KiB.

    VAES_CHUNK_BLOCKS on vaes_avx2, seal and open (chunks of WIDE_CHUNK blocks; design notes
    "Zen 3, fourth session"): against the general path, same run, Zen 3, seal 257-511 B
    0.79-0.98x (512 B 1.03x: the limit sits on 511 B, where target 2 compares with 496 B),
    open 257-305 B 0.88-0.97x, but 1.02-1.09x at 320, 352 and 384 B, where the general dec's
    lead group of 16 ends without an odd block, so open stopped at 19 blocks.  With the
    chunks' first round from the table (`first_round_chunk`) open takes 32 blocks too: against
    19, same run, Zen 3, open 305-511 B 0.73-0.92x, 512 B 0.95x."""
    if _wide_unmasked(backend):
        return VAES_CHUNK_BLOCKS[mode]
    if not one_block_wide(backend):
        return 0
    return CHUNK_BLOCKS["avx" if backend.vex else "sse"][mode]


def record_stitched(params: Params) -> tuple[int, int] | None:
    """Block counts within medium_blocks whose records the stitched record path takes instead
    (None: none).  vaes_avx512, same run, Zen 4 (design notes, "Zen 4, sixteenth session"):
    its stitched path costs a flat 35.8 ns for one group of 13-16 blocks and 44.9 ns for
    the group and a masked end (17-19 blocks); copy + pieces cost 33.1-35.0 ns at 13-14 blocks,
    37.0-37.7 at 15-16 and 38.6-40.8 at 17-19."""
    return RECORD_STITCHED if params.backend.masked and medium_blocks(params) > record_pieces(
        params) else None


def record_pieces(params: Params) -> int:
    """The most blocks of text a record takes through pieces with the byte by value
    (vg.short.enc.byte and .long): SHORT_BLOCKS, but RECORD_PIECES where the pieces go further
    (vaes_avx512): there records of 9-12 blocks through pieces with the byte measured 0.87-0.97x
    the stitched record path (Zen 4); past 12 blocks, the copy into the output and seal's
    pieces (vg.short.enc.copy) measured as fast or faster (build_record_copy)."""
    if piece_blocks(params.backend) > SHORT_BLOCKS:
        return min(RECORD_PIECES, piece_blocks(params.backend))
    return SHORT_BLOCKS


def long_records(params: Params) -> bool:
    """Whether records past SHORT_BLOCKS have pieces of their own, vg.short.enc.byte.long."""
    return record_pieces(params) > SHORT_BLOCKS


def piece_blocks(backend: Backend, mode: Mode = ENC) -> int:
    """The most blocks of text one straight-line piece takes: SHORT_BLOCKS, but MASKED_PIECES
    on vaes_avx512 (design notes, "Longer pieces on vaes_avx512" and "Zen 4, tenth session").
    Why: its general path costs about 33-37 ns at 129-256 B, the pieces 25-34 ns (their last
    pair masked), so wherever the pieces stop below 256 B the step to the general path is about
    9 ns, past target 2's 8 ns.  Past 256 B the general path is flat where its masked end
    grows by one zmm vector (Zen 4: 257-320 B 41.8 ns, 321-384 B 45.8) and the pieces rise
    about 1.1 ns a block (257 B 34.4, 304 B 36.2, 320 B 37.8), so seal's pieces stop at 19
    blocks, where the step to the general path is smallest (305 B: +5.7 ns; stopping at 20
    blocks left +8.0 at 321 B, at 16 +8.7 at 257 B).  Open's too, from LONG_OPEN blocks in a
    function of their own (`long_opens`); in one function with the shorter ones, pieces past
    14 blocks lost to the general path's zmm GHASH."""
    return MASKED_PIECES[mode] if _masked(backend) else SHORT_BLOCKS


def hash_first(params: Params, mode: Mode, m: int, tail: bool = False) -> bool:
    """Whether a piece of m blocks hashes its text before the AES: open's text is the
    ciphertext, so its GHASH needs no keystream.  In program order after the AES (as seal's
    must be), the one-block-wide backends' 16 registers, 11 of them round keys at AES-128,
    spilled E(J0)'s state on the tag's path (4-8 block pieces).  Hashed and reduced first, the
    sums are one register before the AES starts.  Same-run A/B, Zen 3, two stack offsets:
    aesni_pclmul_avx open 65-128 B 0.77-0.94x, 208-256 B 0.86-0.93x, 64 B 0.98-1.00x.  Not
    kept: on aesni_pclmul (SSE) whole blocks gained (64-96 B 0.94-0.97x) but a partial last
    block of 5 lost (65 B 1.06x, 200 B 1.06x); below HASH_FIRST blocks the multiplies, older in
    program order, delayed the AES chain (16-48 B 1.07-1.10x); on vaes_avx2 16-300 B lost
    (1.02-1.23x); the medium path's chunk hashed first lost too (144-336 B 1.00-1.09x).

    The one-block piece on the CPUs of HASH_FIRST_ONE as well, but not as the ``tail`` after
    a chunk (the medium path, the chunks): on Zen 5, where the multiplies and the AES rounds do
    not wait for each other's pipes (design notes, "Zen 5, eighteenth session"), open 8-16 B
    measured 0.96-0.98x, 1 B and 17-80 B 0.99-1.02x (same run, two stack offsets); two and
    three blocks there 1.00x and 1.03x, the one-block tail at 144-160 B 1.01-1.04x.

    vaes_avx512: open's pieces from LONG_OPEN blocks, ymm pairs included (`long_opens`)."""
    backend = params.backend
    if long_opens(backend, mode):
        return m >= LONG_OPEN
    return (not mode.hashes_output and one_block_wide(backend) and backend.vex
            and (m >= HASH_FIRST or (m == 1 and not tail and params.cpu in HASH_FIRST_ONE)))


def long_opens(backend: Backend, mode: Mode) -> bool:
    """Whether open's pieces run to MASKED_PIECES[DEC] blocks, those from LONG_OPEN blocks in
    vg.short.dec.long (its caller branches on the length), hashing first, with the round keys
    loaded where used: vaes_avx512.  Why (same run, Zen 4, two stack offsets, against pieces
    to 14 blocks in one function): there open cost 1.08-1.17x seal at 128-304 B; the xmm round
    keys sat in 15 registers above the jump table.  The three together: open 64-128 B
    0.88-0.98x, 192-304 B 0.87-0.95x, 144-176 B 0.96-1.00x, 16-48 B 1.01-1.02x.  Apart, in the
    same session: longer pieces alone lost at 256 B (1.05x); hashing first without the split
    1.06-1.09x at 144-176 B and 1.06x at 16 B (the shorter pieces' registers moved); the split
    with the keys hoisted 1.045x at 128 B; the split and the keys without a call (a tail call
    from vg.short.dec's switch) 1.05x at 16 B (a callee-saved register in every open)."""
    return _masked(backend) and mode is DEC


def keys_where_used(backend: Backend, mode: Mode) -> bool:
    """Whether open's pieces load each round key where its round first uses it
    (`KeysWhereUsed`) on the one-block-wide backends.  Loaded first in every piece, the keys
    were the same instructions at the top of every arm of the block-count switch (whose
    default LLVM finds unreachable: vg.short.dec's callers bound its length), and LLVM hoisted
    them above the switch: 11 registers at AES-128, live through the hash-first pieces, which
    spilled their GHASH terms (aesni_pclmul_avx, 4-8 blocks: 30-40 stack accesses per piece,
    now 2-12).  Same-run A/B, Zen 3, two stack offsets: open 48-128 B 0.92-0.98x (65 B
    0.88-0.90x), 32 B 1.01x on aesni_pclmul_avx; 16-128 B 0.90-0.99x on aesni_pclmul.  Not
    seal: its keys were not hoisted (its switch's default is reachable), and loaded where used
    its records lost (aesni_pclmul_avx gather 96-112 B 1.02-1.04x).  Open on vaes_avx512 too
    (`long_opens`)."""
    return (one_block_wide(backend) or long_opens(backend, mode)) and not mode.hashes_output


def separate_medium(params: Params) -> bool:
    """Whether the medium path is its own function, vg.short.<mode>.medium: on the one-block-
    wide backends, where the chunk inside vg.short.<mode> reallocated the shared pieces'
    registers (seal 80 / 96 B 1.08-1.11x on aesni_pclmul_avx)."""
    return one_block_wide(params.backend)


def _wide_unmasked(be: Backend) -> bool:
    return be.prims == "x86" and not be.masked and be.width >= WIDE


def _masked(be: Backend) -> bool:
    """vaes_avx512: masked loads and stores (its long pieces, open's long function, the
    narrow texts)."""
    return be.prims == "x86" and be.masked


def record_registers(backend: Backend) -> bool:
    """Whether vg.short.enc.byte and .byte.long (internal: the C ABI is untouched) take
    LLVM's RECORD_CC convention: all nine arguments in registers, none of the caller's
    registers to save: vaes_avx512.  Why (Zen 5): under the C convention they saved five
    registers and read three stack arguments, and their register restores came right after
    their output stores; where a restore shared its page offset with an output block (at the
    driver's default stack offset, 2560, for records of 48-127 B) the load waited on the store
    (4K aliasing): 2-3 ns.  Without them, same run, seven stack offsets: gather n + 1 at
    16-191 B 0.93-0.99x (48-127 B at 2560: 0.81-0.91x), two-slice 0.93-0.99x; 193-256 B
    1.00-1.04x (their callers' registers moved).  Not on the other x86 backends: gather 0.94-0.99x
    at 16-127 B but 1.01-1.02x at 176-256 B, and their target 5 held already (design notes,
    "Zen 5, twenty-second session")."""
    return _masked(backend)


def narrow_texts(backend: Backend) -> bool:
    """Whether texts of 1..NARROW_BLOCKS blocks go to vg.short.<mode>.narrow, whose pieces
    use no vector wider than xmm, picked by its caller on the length (`call`): vaes_avx512.
    Why: inside vg.short.<mode> LLVM ends them with a `vzeroupper`, though they run xmm
    instructions only (register coalescing gives the nonce block a ymm register at the entry,
    which the wide pieces broadcast, and the pieces share one return), and on Zen 5 that
    `vzeroupper` is about 5% of a 16-byte seal.  A function without a ymm register has none.
    Same run against the pieces inside vg.short.<mode>, Zen 5, two stack offsets: seal 1-16 B
    0.94-0.96x, 32 B 0.98-1.00x, 33-64 B 1.00-1.02x, 0 B and 128 B-1 KiB 1.00x; open 1-32 B
    0.96-0.98x, 64 B 1.02x, 144-192 B 1.01-1.016x (design notes, "Zen 5, twenty-first
    session").  Not on vaes_avx2: there open 33-64 B measured 1.03x and seal 16 B 0.985x
    (twentieth session)."""
    return _masked(backend)


def call(fn: Fn, mode: Mode, args: list, blocks: int | None = None) -> ir.Value:
    """vg.short.<mode>(args) for a text the caller checked with fits(..., blocks), blocks
    medium_blocks unless given: where the medium path (and the chunks) are functions of their
    own, branches on the length pick them (.medium past SHORT_BLOCKS, .chunks past
    MEDIUM_BLOCKS), as they pick open's .long; then, where the backend has them, texts of
    1..NARROW_BLOCKS blocks go to .narrow (`narrow_texts`): one unsigned compare of the
    length less one, after open's test for .long (Zen 5, against no narrow function: open
    144-192 B 1.009-1.016x, 208-304 B 1.00-1.01x; with the compare first, 144-208 B
    1.012-1.024x)."""
    em, b = fn.em, fn.b
    blocks = blocks or medium_blocks(fn.params, mode)

    def go(**which: bool) -> list[ir.Value]:
        return [b.call(b.module.globals[symbol(mode, **which)], args)]

    def past(n: int) -> ir.Value:
        return b.icmp_unsigned(">", args[6], ir.Constant(i64, 16 * n))

    def short() -> list[ir.Value]:
        if not narrow_texts(fn.params.backend):
            return go()
        narrow = within(b, args[6], 1, 16 * NARROW_BLOCKS)
        return em.if_else_values(narrow, lambda: go(narrow=True), go, "narrow")

    if chunks_inside(fn.params, mode) and blocks > MEDIUM_BLOCKS:
        # weighted: the short path falls through (laid out behind the call, it measured
        # seal 64-256 B 1.02-1.03x at one stack offset, Zen 3)
        ends = []
        chunks, short, join = (b.append_basic_block(f"chunks.{k}")
                               for k in ("then", "else", "join"))
        b.cbranch(past(MEDIUM_BLOCKS), chunks, short).set_weights([1, 99])
        for bb, which in ((short, {}), (chunks, {"chunks": True})):
            b.position_at_end(bb)
            ends.append((go(**which)[0], b.block))
            b.branch(join)
        b.position_at_end(join)
        t = b.phi(vec(1), name="chunks.t")
        for v, blk in ends:
            t.add_incoming(v, blk)
        return t
    if long_opens(fn.params.backend, mode) and blocks >= LONG_OPEN:
        (t,) = em.if_else_values(past(LONG_OPEN - 1), lambda: go(long=True), short, "long")
        return t
    if not separate_medium(fn.params) or blocks <= SHORT_BLOCKS:
        return short()[0]
    longer = lambda: go(medium=True)  # noqa: E731
    if blocks > MEDIUM_BLOCKS and chunk_blocks(fn.params.backend, mode):
        longer = lambda: em.if_else_values(  # noqa: E731
            past(MEDIUM_BLOCKS), lambda: go(chunks=True), lambda: go(medium=True), "chunks")
    (t,) = em.if_else_values(past(SHORT_BLOCKS), longer, go, "medium")
    return t


def fits(b: ir.IRBuilder, nl: ir.Value, al: ir.Value, ln: ir.Value,
         blocks: int = SHORT_BLOCKS) -> ir.Value:
    """Whether a message takes the short path with texts of at most ``blocks`` blocks
    (``medium_blocks`` where the caller allows the medium path); lengths only: public."""
    c = lambda x: ir.Constant(i64, x)  # noqa: E731
    return b.and_(b.and_(b.icmp_unsigned("==", nl, c(12)), b.icmp_unsigned("<=", al, c(MAX_AAD))),
                  b.icmp_unsigned("<=", ln, c(16 * blocks)))


def chunks_inside(params: Params, mode: Mode) -> bool:
    """Whether the caller of vg.short.<mode> picks vg.short.<mode>.chunks past MEDIUM_BLOCKS
    (`call`: a branch on the length before the call) on a backend whose medium path lives in
    vg.short.<mode> (vaes_avx2).  Not vg.short.<mode> itself: a case of its switch, or a
    branch at its top, changed its register allocation (seal 64-128 B 1.06-1.08x, Zen 3)."""
    return _wide_unmasked(params.backend) and bool(chunk_blocks(params.backend, mode))


def build_all(module: ir.Module, params: Params) -> None:
    for mode in (ENC, DEC):
        if long_opens(params.backend, mode):  # first: vg.short.dec's caller calls it
            build_short(module, params, mode, long_only=True)
        if narrow_texts(params.backend):
            build_short(module, params, mode, narrow_only=True)
        build_short(module, params, mode)
        if separate_medium(params):
            build_short(module, params, mode, medium_only=True)
        if chunk_blocks(params.backend, mode):
            build_short(module, params, mode, chunks_only=True)
    if long_records(params):  # first: vg.short.enc.byte calls it
        build_short(module, params, ENC, extra=True, long_only=True)
    build_short(module, params, ENC, extra=True)
    if record_pieces(params) < medium_blocks(params):
        build_record_copy(module, params)


def placed_last(params: Params) -> list[str]:
    """The functions `module.generate` moves to the end of the module: the VAES chunks, so
    adding them moved no function before them (a function added mid-module moved open at
    257-367 B by 4-10% with its code unchanged, Zen 3: design notes); and vg.short.enc.copy
    where it is new, on vaes_avx512 (mid-module it moved the entries: gather and two-slice
    with 1-1.1 KiB records 1.04-1.06x, their code unchanged); and the narrow functions, so no
    other function moved."""
    last = [symbol(m, chunks=True) for m in (ENC, DEC) if chunks_inside(params, m)]
    last += [symbol(m, narrow=True) for m in (ENC, DEC) if narrow_texts(params.backend)]
    return last + ([RECORD_COPY] if record_stitched(params) is not None else [])


__all__ = ["MAX_AAD", "MEDIUM_BLOCKS", "NARROW_BLOCKS", "SHORT_BLOCKS", "build_all", "call",
           "call_record", "chunk_blocks", "fits", "medium_blocks", "narrow_texts", "nonce_block",
           "piece_blocks", "placed_last", "record_pieces", "record_stitched",
           "separate_medium", "symbol", "with_byte"]
