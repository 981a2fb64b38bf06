"""Measure every target of issue 12 on this host, in one run: raw tidy rows.

Two parts, both through the project's driver (TSC, pinned, placed stack):

* in this process, per backend, interleaved round-robin: in-place seals at the bulk, sawtooth,
  remainder and short sizes; the instruction-mix bound and the AES-only bound
  (:mod:`vgkernels.bench.bound`); the bulk loop's hot path replayed on its own, whole and in
  parts (:mod:`vgkernels.bench.replay`); the 16-byte serial floor; the "nonce just written" seals
  (driver kinds ``seal_store8`` / ``seal_store4``) beside a plain 16-byte seal, and that seal
  one call at a time (kind ``seal_serial``: an ``lfence`` after each call); the placement
  sweep (seal_out with the output at every 64-byte page offset from its input, at
  ALIGN_OFFSETS bytes past a 64-byte boundary, all in one region so only the page offset
  varies; the same page offset in buffers of their own, where the output's pages may share the
  L1D way predictor's µtag with the key context's (`utag`); seal in place at every 256-byte
  stack offset, and at the four 16-byte offsets of a few stack lines),
  then its offsets (the slowest few, or all) timed again
  against its fastest in paired rounds spread over seconds (:func:`confirm_placement`); and,
  once, ``vaesenc`` alone at each width and chain count (issue rate per core cycle, from the
  driver's clock probe);
* the named sweeps ``sizes`` (seal, gather, copy + seal, open, and the peers at the same
  instruction-set level: OpenSSL masked per backend, the bundled OpenSSL, aws-lc) and
  ``two_slice``, one masked worker process per backend.

:func:`measure` returns one row per case (``part`` says which); vgkernels.analysis.targets turns
them into the targets table.
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import pandas as pd

from .. import abi
from ..backends import availability, get
from ..buffers import PAGE, Buf
from ..command import backend_row
from . import bound, replay, utag
from .cases import OUT_OFFSET, Builder, CaseSpec, alloc_apart, message, share_buffers
from .driver import PRESTORE_SLOTS, Case, Driver, Timing, hold
from .driver import driver as get_driver

BACKENDS = ("aesni_pclmul_avx", "vaes_avx2", "vaes_avx512")  # the bulk targets
# target 5 (records) is set for every x86 backend
RECORD_BACKENDS = ("aesni_pclmul", *BACKENDS)
BULK = (16384, 65536)
REMAINDER_BASE = 1024  # whole groups for every backend (64 blocks)
SHORT = (16, 64)
FLOOR_LINKS = 64
# The output this many bytes past a 64-byte boundary (the input aligned): a TLS stack seals the
# payload where it lies, 5 bytes after the record header.  On Zen 4 vaes_avx512 measured seal
# 16 KiB 8-17% slower for any output not 32-byte aligned (design notes, "Output alignment").
ALIGN_OFFSETS = (0, 5, 16, 32, 48)
ALIGN_BASE = OUT_OFFSET  # the output's page offset for ALIGN_OFFSETS: the cases' output


# A caller's stack pointer is 16-byte aligned at a call (the SysV ABI), so within a line it
# takes one of these offsets; the driver pins it at STACK_OFFSET, a multiple of 64.
STACK_ALIGNS = (0, 16, 32, 48)


@dataclass(frozen=True)
class Profile:
    """How much to measure (``quick``: the notebook's quick profile)."""

    k: int = 15  # samples per case (in-process part)
    passes: int = 3  # the k samples are taken in this many passes, ``gap_s`` apart
    gap_s: float = 1.0
    target_us: float = 20.0
    # 127 and 129: the last partial block inside the short path (128 B), the first past it;
    # 257: the first past vaes_avx2's medium path (256 B); 305: the first past vaes_avx512's
    # longest seal piece (304 B)
    sawtooth: tuple[int, ...] = (31, 79, 127, 129, 255, 257, 305, 511, 1023, 2047, 4095, 16383)
    remainders: int | None = None  # None: every r in 1..group-1; else this many, spread
    place_sizes: tuple[int, ...] = (4096, 16384)
    io_step: int = 64
    stack_step: int = 256
    # lines of the stack at whose four 16-byte offsets (the ABI's whole choice within a line)
    # the seal is timed too: the sweeps above step by whole lines
    stack_lines: tuple[int, ...] = (0, 1024, 2048, 3072)
    va_buffers: int = 32  # outputs at one page offset in buffers of their own (`utag`)
    # key contexts on pages of their own (the builder's first), the seal's stack and buffers
    # fixed: what a context the core's store-to-load check pairs with the stack costs
    # (`cases.CTX_CANDIDATES`)
    ctx_pages: int = 16
    ctx_sizes: tuple[int, ...] = (1024, 4096)
    # the sweep's slowest offsets (None: every offset), timed again beside its fastest in
    # paired rounds
    confirm_slowest: int | None = None
    confirm_k: int = 21
    confirm_gap_ms: float = 25.0
    # open against seal and the peers; 128, 192 and 288 B fall in vaes_avx512's pieces (and
    # vaes_avx2's chunks), where open measured 1.08-1.17x seal before its long pieces; 752 and
    # 1104 B end 7 and 5 blocks after vaes_avx2's groups (open 1.05-1.09x seal before its
    # rest pieces) and in a masked end of one and two groups on vaes_avx512.  Records: 1535
    # and 2047 B end the one-block-wide backends' chunks (aesni_pclmul) and vg.record.pieces
    # (`gather.RECORD_UPTO`), 1743 B lies between
    sweep_sizes: tuple[int, ...] = (16, 64, 128, 192, 256, 288, 752, 1024, 1104, 4096, 16384,
                                    65536)
    record_sizes: tuple[int, ...] = (16, 63, 64, 127, 255, 256, 511, 1023, 1535, 1743, 2047,
                                     4096, 16384)
    sweep_k: int = 11
    aes_chains: tuple[int, ...] = (4, 8, 12, 16)
    peers: bool = True


PROFILES = {
    "full": Profile(),
    "quick": Profile(k=9, passes=3, gap_s=0.3, target_us=10.0,
                     sawtooth=(129, 255, 257, 305, 511, 1023, 4095),
                     remainders=4, io_step=256, stack_step=512, va_buffers=12,
                     stack_lines=(1024, 3072), ctx_pages=8, ctx_sizes=(1024,),
                     confirm_slowest=6,
                     confirm_k=11,
                     sweep_sizes=(16, 64, 1024, 16384, 65536),
                     record_sizes=(63, 255, 256, 1023, 2047, 16384), sweep_k=5,
                     aes_chains=(4, 8, 16)),
    "tiny": Profile(k=3, passes=1, gap_s=0.0, target_us=5.0, sawtooth=(511,), remainders=1,
                    place_sizes=(4096,), io_step=1024, stack_step=1024, va_buffers=2,
                    stack_lines=(2048,), ctx_pages=2, ctx_sizes=(1024,),
                    confirm_slowest=1,
                    confirm_k=3, confirm_gap_ms=0.0, sweep_sizes=(16, 16384),
                    record_sizes=(255,), sweep_k=3, aes_chains=(8,)),
}


def usable_backends(names: Sequence[str] | None = None) -> list[str]:
    """The named backends (default: the issue's three) that this CPU (and VG_CPU_FEATURES)
    can run."""
    avail = availability()
    return [b for b in (names or BACKENDS) if avail.get(b) is None]


def remainder_blocks(group: int, count: int | None) -> list[int]:
    """r = 1..group-1 (all of them, or ``count`` spread over the range, always with 1 and
    group - 1)."""
    rs = list(range(1, group))
    if count is None or count >= len(rs):
        return rs
    if count <= 1:
        return [group - 1]
    step = (len(rs) - 1) / (count - 1)
    return sorted({rs[round(j * step)] for j in range(count)})


@dataclass
class _Bench:
    """The in-process part's cases, with the columns each row gets."""

    driver: Driver
    builder: Builder
    cases: list[Case] = field(default_factory=list)
    keep: list[object] = field(default_factory=list)

    def add(self, case: Case, **label: object) -> None:
        case.label = {**case.label, **label}
        self.cases.append(case)


def _scratch() -> Buf:
    return Buf.alloc(bound.SCRATCH, message(bound.SCRATCH, seed=7), page_offset=0)


def _bound_library(width: int, loops: list[bound.MixLoop], floors: list[bound.FloorChain]):
    from .. import jit

    return jit.compile_ir(f"vg_bench_bound_w{width}", bound.module_ir(loops, floors),
                          bound.llvm_features(width))


def _native(drv: Driver, fn: int, ctx: int, n: int, tag: int, blk: Buf) -> Case:
    """A case calling ``fn`` through the driver's seal loop (seal signature)."""
    case = Case({}, "seal", [fn, ctx, 0, 0, 0, 0, 0, n, tag])
    case.place_block(blk.addr, blk.n)
    case.keep.append(blk)
    return case


def _add_loops(bench: _Bench, lib: object, loops: Sequence, total: int,
               label: Callable[[object], dict[str, object]]) -> None:
    """A case per generated loop of ``lib`` (each with ``name()`` and ``bytes_per_iter``),
    over the whole iterations in ``total`` bytes, on one scratch block; ``label(loop)``: the
    row's columns besides ``n`` and ``bytes_per_iter``."""
    scratch, tag = _scratch(), Buf.alloc(64, page_offset=3200)
    bench.keep += [lib, scratch, tag]
    for spec in loops:
        n = total // spec.bytes_per_iter * spec.bytes_per_iter
        c = _native(bench.driver, lib.address(spec.name()), scratch.addr, n, tag.addr,
                    Buf.alloc(128, page_offset=3328))
        bench.add(c, n=n, bytes_per_iter=spec.bytes_per_iter, **label(spec))


def _add_bounds(bench: _Bench, backend: str) -> None:
    be = get(backend)
    mix = bound.kernel_mix(backend)
    full = bound.mix_loop(mix, be.width)
    ctr = bound.mix_loop(mix, be.width, aes_only=True)
    floor = bound.FloorChain(be.width, karatsuba=be.karatsuba_for())
    lib = _bound_library(be.width, [full, ctr], [floor])
    _add_loops(bench, lib, [full, ctr], 65536, lambda spec: {
        "part": "bound_mix" if spec is full else "bound_ctr", "backend": backend,
        "aes_per_iter": spec.aes_per_iter, "clmul_per_iter": spec.clmul_per_iter,
        "chains": spec.chains, "width": spec.width})
    scratch, tag = _scratch(), Buf.alloc(64, page_offset=3200)
    bench.keep += [scratch, tag]
    c = _native(bench.driver, lib.address(floor.name()), scratch.addr, FLOOR_LINKS, tag.addr,
                Buf.alloc(128, page_offset=3456))
    bench.add(c, part="floor", backend=backend, n=FLOOR_LINKS, width=floor.width)


def _add_replays(bench: _Bench, backend: str) -> None:
    """Target 1's hot loop replayed on its own (`replay`): as is, its AES and multiplies
    alone, and with all, 3/4, 2/4, 1/4 of its other vector work free of chains, or one class
    of it, or whole with one class's chains cut (where the host has AVX-512 and the loop
    leaves registers 16-31 unused: `replay.PARTS`)."""
    from .. import jit

    avx512 = availability().get("vaes_avx512", "absent") is None
    parts = replay.replays(backend, avx512)
    zmm = any(r.part in replay.FREE_PARTS for r in parts) or get(backend).width == 4
    lib = jit.compile_ir(f"vg_bench_replay_{backend}", replay.module_ir(parts, zmm),
                         get("vaes_avx512" if zmm else backend).llvm_features)
    _add_loops(bench, lib, parts, 65536, lambda r: {
        "part": f"replay_{r.part}", "backend": backend, "others": r.others,
        "others_total": r.others_total, "in_place": r.in_place, "instructions": len(r.body)})


def _add_seals(bench: _Bench, backend: str, prof: Profile) -> None:
    group = get(backend).group  # default variant's group
    sizes = set(BULK) | set(SHORT) | set(prof.sawtooth) | {n // 16 * 16 for n in prof.sawtooth}
    sizes |= {REMAINDER_BASE + 16 * r for r in [0, *remainder_blocks(group, prof.remainders)]}
    # every size on the buffers of the largest, so that the differences target 2 takes and
    # the sizes target 1 compares draw the same pages (`cases.CTX_CANDIDATES`)
    built = [bench.builder.build(CaseSpec("seal", n, backend)) for n in sorted(sizes)]
    for c in built:
        share_buffers(built[-1], c)
        if bench.driver.call(c) != 0:
            raise RuntimeError(f"{backend}: seal of {c.label['n']} B failed")
        bench.add(c, part="seal")


def _add_nonce(bench: _Bench, backend: str) -> None:
    """16-byte seals with the nonce's bytes 4..11 (8-byte store) or 8..11 (4-byte store)
    written right before each call, and the plain seal (``mode`` none)."""
    for mode, kind, at in (("none", None, 0), ("store8", "seal_store8", 4),
                           ("store4", "seal_store4", 8)):
        c = bench.builder.build(CaseSpec("seal", 16, backend))
        if kind is not None:
            nonce = c.slots[2]
            slots = list(c.slots) + [0] * (PRESTORE_SLOTS[1] + 1 - len(c.slots))
            slots[PRESTORE_SLOTS[0]] = nonce + at
            slots[PRESTORE_SLOTS[1]] = int.from_bytes(ctypes.string_at(nonce + at, 8), "little")
            c = _rekinded(bench, c, kind, slots)
        bench.add(c, part="nonce", mode=mode)


def _add_serial(bench: _Bench, backend: str) -> None:
    """The 16-byte seal one call at a time (part ``seal_serial``: its latency, beside target
    3's floor)."""
    c = bench.builder.build(CaseSpec("seal", 16, backend))
    bench.add(_rekinded(bench, c, "seal_serial", list(c.slots)), part="seal_serial")


def _add_serial_empty(bench: _Bench) -> None:
    """An empty call timed as `_add_serial` times the seal (``seal_serial_empty``: the
    fence's and the call's own cost, the same for every backend)."""
    e = bench.driver.empty_case()
    bench.add(_rekinded(bench, e, "seal_serial", list(e.slots)), part="seal_serial_empty")


def _rekinded(bench: _Bench, c: Case, kind: str, slots: list[int]) -> Case:
    """Case ``c`` called through the driver's ``kind`` with ``slots``, checked once."""
    blk = Buf.alloc(8 * len(slots), page_offset=3456)
    out = Case(dict(c.label), kind, slots, keep=[*c.keep, blk])
    out.place_block(blk.addr, blk.n)
    if bench.driver.call(out) != 0:
        raise RuntimeError(f"{c.label}: the call through the driver's {kind} failed")
    return out


def _add_seal_out(bench: _Bench, backend: str, fixed: list[int], n: int, tag: int,
                  dst: int, keep: object, **label: object) -> None:
    """A seal_out case (``fixed``: the function and its arguments up to the input) of n bytes
    into the output at address ``dst`` (in ``keep``), checked once, then added with
    ``label``."""
    blk = Buf.alloc(128, page_offset=3712)
    c = Case({"impl": "vgkernels", "backend": backend, "op": "seal_out", "n": n}, "seal_out",
             [*fixed, dst, n, tag], keep=[keep, blk])
    c.place_block(blk.addr, blk.n)
    if bench.driver.call(c) != 0:
        raise RuntimeError(f"{backend}: seal_out failed ({label})")
    bench.add(c, **label)


VA_PAGES = 1024


def _va_buffers(n: int, ctx: int, count: int) -> tuple[Buf, list[tuple[int, bool]]]:
    """``count`` outputs of n bytes at page offset ALIGN_BASE, each starting in a page of its
    own in one 4 MiB region (every 1 MiB of which holds every µtag once): count // 2 whose
    pages share a µtag with the key context's, the rest not.  Returns the region and
    (address, shares) per output."""
    region = Buf.alloc(VA_PAGES * PAGE + n + PAGE, page_offset=0)
    want = {True: count // 2, False: count - count // 2}
    out = []
    for k in range(VA_PAGES):
        at = region.addr + k * PAGE + ALIGN_BASE
        hit = utag.contend((at, n), (ctx, abi.CTX_SIZE))
        if want[hit]:
            want[hit] -= 1
            out.append((at, hit))
    return region, out


def _add_placement(bench: _Bench, backend: str, prof: Profile) -> None:
    spec0 = CaseSpec("seal", 16, backend)
    key, nonce, aad = Builder.material(spec0)
    ctx = bench.builder.ctx(spec0)
    seal_out = bench.builder.address(spec0, "seal_out")
    nb, ab = Buf.alloc(12, nonce, 3200), Buf.alloc(13, aad, 3328)
    tag = Buf.alloc(16, page_offset=3456)
    bench.keep += [nb, ab, tag]
    for n in prof.place_sizes:
        msg = message(n)
        src = alloc_apart(n, msg, page_offset=0)
        bench.keep.append(src)
        fixed = [seal_out, ctx, nb.addr, 12, ab.addr, 13, src.addr]
        # Every offset's output in one region: its pages keep their addresses, so the sweep
        # varies the page offset alone.  A new buffer per offset also drew new pages, and
        # with them the L1D way predictor's µtags (`utag`): a different effect, timed below.
        region = alloc_apart(n + 2 * PAGE, page_offset=0)
        for off in range(0, PAGE, prof.io_step):
            _add_seal_out(bench, backend, fixed, n, tag.addr, region.addr + off, region,
                          part="place_io", offset=off)
        for a in ALIGN_OFFSETS:
            _add_seal_out(bench, backend, fixed, n, tag.addr, region.addr + ALIGN_BASE + a,
                          region, part="place_align", offset=a)
        # the same page offset in other pages, half of them with a page sharing a µtag with
        # a page of the key context (whose lines the loop reads every iteration)
        va, outs = _va_buffers(n, ctx, prof.va_buffers)
        for r, (dst, hit) in enumerate(outs):
            _add_seal_out(bench, backend, fixed, n, tag.addr, dst, va, part="place_va",
                          offset=r, utag_ctx=hit)
        # One seal's buffers at every stack offset: a case of their own per offset drew new
        # pages, and with them the pairings of `cases.CTX_CANDIDATES` with the stack.
        c0 = bench.builder.build(CaseSpec("seal", n, backend))
        for off in range(0, PAGE, prof.stack_step):
            c = _same_buffers(bench, c0)
            c.stack_offset = off
            bench.add(c, part="place_stack", offset=off)
        for off in (line + a for line in prof.stack_lines for a in STACK_ALIGNS):
            c = _same_buffers(bench, c0)
            c.stack_offset = off
            bench.add(c, part="place_stack16", offset=off)
    for n in prof.ctx_sizes:
        _add_ctx_pages(bench, backend, n, prof.ctx_pages)


def _add_ctx_pages(bench: _Bench, backend: str, n: int, count: int) -> None:
    """The in-place seal of n bytes with ``count`` key contexts, one case each, the same
    buffers and stack: context 0 is the builder's (the fastest of its candidates), the others
    are set up on fresh pages, as a caller's would be."""
    spec = CaseSpec("seal", n, backend)
    c0 = bench.builder.build(spec)
    for j in range(count):
        ctx = bench.builder.new_ctx(spec) if j else None
        c = _same_buffers(bench, c0, ctx=ctx)
        if bench.driver.call(c) != 0:
            raise RuntimeError(f"{backend}: seal with key context {j} failed")
        bench.add(c, part="place_ctx", offset=j)


def _same_buffers(bench: _Bench, c0: Case, ctx: Buf | None = None) -> Case:
    """A case of c0's function on c0's buffers, with an argument block of its own (and the
    key context ``ctx`` where given)."""
    slots = list(c0.slots)
    if ctx is not None:
        slots[1] = ctx.addr
    blk = Buf.alloc(8 * len(slots), page_offset=3712)
    c = Case(dict(c0.label), c0.kind, slots, keep=[*c0.keep, ctx, blk])
    c.place_block(blk.addr, blk.n)
    return c


def _add_aes_rate(bench: _Bench, prof: Profile, widths: Sequence[int]) -> None:
    """vaesenc alone at each width and chain count (no multiplies)."""
    for w in widths:
        loops = [bound.MixLoop(w, ch, bound.ROUNDS[16]) for ch in prof.aes_chains
                 if w == 4 or ch <= 12]  # 16 chains + the key: 17 of AVX2's 16 registers
        lib = _bound_library(w, loops, [])
        _add_loops(bench, lib, loops, 16384, lambda spec, w=w: {
            "part": "aes_rate", "backend": f"w{w}", "width": w, "chains": spec.chains,
            "aes_per_iter": spec.aes_per_iter})


def _rows(t: Timing, tsc_hz: float, pass_no: int) -> list[dict]:
    core = t.core_hz(tsc_hz)
    out = []
    for m in t.results:
        s = m.stats(tsc_hz)
        out.append({**m.label, **s, "pass": pass_no, "core_hz": core, "tsc_hz": tsc_hz})
    return out


def _combine(rows: list[dict]) -> pd.DataFrame:
    """One row per case over the passes: the minimum of the minima, the median of the
    medians, the passes' core clock (median)."""
    df = pd.DataFrame(rows)
    if df.empty:
        return df
    keys = [c for c in df.columns if c not in ("min_ticks", "median_ticks", "min_ns",
                                               "median_ns", "median_lo_ns", "median_hi_ns",
                                               "spread", "pass", "core_hz")]
    df[keys] = df[keys].astype(object).where(df[keys].notna(), None)
    agg = {"min_ticks": "min", "median_ticks": "median", "min_ns": "min", "median_ns": "median",
           "spread": "max", "core_hz": "median"}
    return df.groupby(keys, dropna=False, sort=False).agg(agg).reset_index()


def measure_local(backends: Sequence[str], prof: Profile, drv: Driver | None = None,
                  progress: Callable[[str], None] | None = None) -> pd.DataFrame:
    """The in-process part (see the module's docstring)."""
    drv = drv or get_driver()
    bench = _Bench(drv, Builder(drv))
    say = progress or (lambda _msg: None)
    for be in backends:
        say(f"building {be}")
        _add_bounds(bench, be)
        _add_replays(bench, be)
        _add_seals(bench, be, prof)
        _add_nonce(bench, be)
        _add_serial(bench, be)
    _add_serial_empty(bench)
    _add_aes_rate(bench, prof, sorted({get(b).width for b in backends} | (
        {4} if "vaes_avx512" in backends else set())))
    main = list(bench.cases)
    bench.cases.clear()
    for be in backends:
        _add_placement(bench, be, prof)
    place = list(bench.cases)
    rows: list[dict] = []
    per = max(1, prof.k // prof.passes)
    for p in range(prof.passes):
        if p and prof.gap_s:
            hold(prof.gap_s)  # spread the samples: the shared VM has slow phases
        say(f"pass {p + 1}/{prof.passes}")
        rows += _rows(drv.measure(main, k=per, target_ns=prof.target_us * 1e3), drv.tsc_hz, p)
        rows += _rows(drv.measure(place, k=max(1, per // 2), target_ns=prof.target_us * 1e3),
                      drv.tsc_hz, p)
    out = _combine(rows)
    if prof.confirm_k and prof.confirm_slowest != 0:
        say("placement offsets again, in pairs with the fastest")
        out = pd.concat([out, confirm_placement(drv, place, out, prof)], ignore_index=True)
    return out


def measure_replays(backends: Sequence[str] | None = None, k: int = 21,
                    gap_ms: float = 20.0, drv: Driver | None = None) -> pd.DataFrame:
    """Target 1's loop replays alone (``vgkernels bench replay``), every part of every usable
    backend among ``backends`` (default: the issue's three) in each of ``k`` rounds,
    ``gap_ms`` apart: the rows `analysis.targets.loop_replay` reads."""
    bes = usable_backends(backends)
    if not bes:
        raise RuntimeError("none of the backends " + ", ".join(backends or BACKENDS)
                           + " is usable on this CPU")
    drv = drv or get_driver()
    bench = _Bench(drv, Builder(drv))
    for be in bes:
        _add_replays(bench, be)
    t = drv.measure(bench.cases, k=k, target_ns=PROFILES["full"].target_us * 1e3, gap_ms=gap_ms)
    return _combine(_rows(t, drv.tsc_hz, 0))


def main_replay(argv: list[str]) -> int:
    """``vgkernels bench replay``: target 1's loops replayed on their own, the table and what
    1.15 leaves room for."""
    import argparse

    p = argparse.ArgumentParser(
        prog="vgkernels bench replay",
        description="Target 1's bulk loop replayed on its own (vgkernels.bench.replay): as is, "
                    "its AES and multiplies alone, and (AVX-512 hosts, 16-register loops) with "
                    "all, 3/4, 2/4, 1/4 of its other vector instructions free of chains, or "
                    "only those that compute, or only its loads, stores and moves, and whole "
                    "with the chains through one of those two classes cut.")
    p.add_argument("--backends", help="comma list (default: " + ",".join(BACKENDS)
                   + ", the usable ones)")
    p.add_argument("--k", type=int, default=21, help="rounds (default 21)")
    p.add_argument("--gap-ms", type=float, default=20.0, help="spin between rounds (default 20)")
    args = p.parse_args(argv)
    names = [b.strip() for b in args.backends.split(",")] if args.backends else None
    for b in names or ():
        backend_row(b, usable=True)
    with pd.option_context("display.width", 200, "display.max_rows", None):
        _print_replays(measure_replays(names, args.k, args.gap_ms))
    return 0


def _print_replays(raw: pd.DataFrame) -> None:
    """The replay table and the budget (`analysis.targets.loop_replay`, `loop_budget`), if
    ``raw`` has replay rows."""
    from ..analysis import targets as at

    rep = at.loop_replay(raw)
    if len(rep):
        print("target 1's hot loop replayed on its own (vs_core: against its AES and "
              "multiplies alone)")
        print(rep.to_string(index=False, float_format=lambda v: f"{v:.4g}"))
        print(at.loop_budget(rep).to_string(index=False, float_format=lambda v: f"{v:.4g}"))


PLACEMENT_PARTS = ("place_io", "place_align", "place_stack", "place_va", "place_stack16",
                   "place_ctx")


def confirm_candidates(combined: pd.DataFrame, slowest: int | None
                       ) -> dict[tuple, list[int]]:
    """Per (part, backend, n) of the placement sweep: the fastest offset first, then the
    ``slowest`` offsets (None: all the others) with the highest minima (the sweep's few
    samples per offset, taken within milliseconds, can all fall into one of the VM's slow
    phases)."""
    out: dict[tuple, list[int]] = {}
    place = combined[combined["part"].isin(PLACEMENT_PARTS)]
    for key, g in place.groupby(["part", "backend", "n"], sort=False):
        g = g.sort_values("min_ns")
        fast = int(g["offset"].iloc[0])
        slow = [int(o) for o in g["offset"].iloc[::-1] if int(o) != fast][:slowest]
        out[key] = [fast, *slow]
    return out


def confirm_placement(drv: Driver, place: Sequence[Case], combined: pd.DataFrame,
                      prof: Profile) -> pd.DataFrame:
    """The sweep's slowest offsets timed again, each round one sample of every candidate
    back to back (each round starting from the next candidate, so none is always the first
    after the gap), rounds ``confirm_gap_ms`` apart: per candidate the median over rounds of
    its sample over the fastest offset's sample of the same round (``paired_ratio``, with a
    95% bootstrap interval), so a slow phase of the VM raises both sides of a pair alike."""
    import numpy as np

    from ..analysis.compare import paired

    by_label = {(c.label["part"], c.label["backend"], int(c.label["n"]), int(c.label["offset"])): c
                for c in place}
    rows = []
    for (part, be, n), offs in confirm_candidates(combined, prof.confirm_slowest).items():
        cases = [by_label[(part, be, int(n), o)] for o in offs]
        t = drv.measure(cases, k=prof.confirm_k, target_ns=prof.target_us * 1e3,
                        gap_ms=prof.confirm_gap_ms, rotate=True)
        fast_ns = np.asarray(t.results[0].ticks) / drv.tsc_hz * 1e9
        for o, m in zip(offs, t.results, strict=True):
            ns = np.asarray(m.ticks) / drv.tsc_hz * 1e9
            samples = pd.DataFrame({"round": np.tile(np.arange(len(ns)), 2),
                                    "side": ["head"] * len(ns) + ["base"] * len(ns),
                                    "ns": np.concatenate([ns, fast_ns]), "case": 0})
            pr = paired(samples, ["case"]).iloc[0]
            rows.append({"part": f"{part}_confirm", "backend": be, "n": int(n), "offset": o,
                         "role": "fastest" if o == offs[0] else "slow",
                         "min_ns": float(ns.min()), "median_ns": float(np.median(ns)),
                         "paired_ratio": float(pr["ratio"]), "paired_lo": float(pr["lo"]),
                         "paired_hi": float(pr["hi"]), "rounds": int(pr["rounds"]),
                         "tsc_hz": drv.tsc_hz})
    return pd.DataFrame(rows)


# Same-visit comparisons of the sweeps (part, base (op, shape), heads): every round of a chunk
# times its cases back to back, so a round's pair saw the same phase of the VM.
PAIRS = (("sweep_records", ("copy_ip", "n+1"), (("gather", "n+1"), ("two_slice", "n+1"))),
         ("sweep_sizes", ("copy_ip", "n+1"), (("gather", "n+1"),)),
         ("sweep_sizes", ("seal", "one"), (("open_out", "one"),)))


def paired_rows(samples: pd.DataFrame, part: str, base: tuple[str, str],
                heads: Sequence[tuple[str, str]]) -> pd.DataFrame:
    """Per (backend, n) and head op: the median over rounds of head / base timed in the same
    round of the same chunk visit (``paired_ratio``, with its 95% bootstrap interval), as rows
    of ``<part>_paired`` (``op`` the head, ``base_op`` the base)."""
    from ..analysis.compare import paired

    s = samples[samples["impl"] == "vgkernels"]
    rnd = ["run", "pass", "sample"]
    b = s[(s["op"] == base[0]) & (s["shape"] == base[1])]
    out = []
    for op, shape in heads:
        h = s[(s["op"] == op) & (s["shape"] == shape)]
        if h.empty or b.empty:
            continue
        both = pd.concat([h.assign(side="head"), b.assign(side="base")], ignore_index=True)
        both["round"] = both[rnd].astype(str).agg("/".join, axis=1)
        tab = paired(both[["backend", "n", "round", "side", "ns"]], ["backend", "n"])
        if tab.empty:
            continue
        out.append(tab.rename(columns={"ratio": "paired_ratio", "lo": "paired_lo",
                                       "hi": "paired_hi"})
                   .assign(part=f"{part}_paired", op=op, shape=shape, base_op=base[0]))
    return pd.concat(out, ignore_index=True) if out else pd.DataFrame()


def measure_sweeps(backends: Sequence[str], prof: Profile,
                   records: Sequence[str] | None = None) -> pd.DataFrame:
    """The ``sizes`` (with peers) and ``two_slice`` sweeps, one masked worker per backend, and
    their same-round pairs (`PAIRS`); ``two_slice`` on ``records`` (default: ``backends``)."""
    from .sweep import run

    frames = []
    common = dict(backends=list(backends), k=prof.sweep_k, passes=min(3, prof.sweep_k),
                  target_us=prof.target_us, save=False, progress=False, samples=True)
    res = run("sizes", sizes=list(prof.sweep_sizes), peers=prof.peers, **common)  # aws-lc too
    found = {"sweep_sizes": res}
    frames.append(res.df.assign(part="sweep_sizes"))
    ts = [b for b in (backends if records is None else records) if get(b).two_slice]
    if ts:
        res = run("two_slice", sizes=list(prof.record_sizes), peers=False,
                  **{**common, "backends": ts})
        found["sweep_records"] = res
        frames.append(res.df.assign(part="sweep_records"))
    for part, base, heads in PAIRS:
        if part in found and len(found[part].samples):
            frames.append(paired_rows(found[part].samples, part, base, heads))
    return pd.concat(frames, ignore_index=True)


def measure(backends: Sequence[str] | None = None, profile: str | Profile = "full",
            sweeps: bool = True, progress: Callable[[str], None] | None = None
            ) -> pd.DataFrame:
    """Every raw row issue 12's targets need, for the usable backends among ``backends``
    (None: BACKENDS, and RECORD_BACKENDS for target 5)."""
    prof = PROFILES[profile] if isinstance(profile, str) else profile
    bes = usable_backends(backends)
    if not bes:
        raise RuntimeError("none of the backends " + ", ".join(backends or BACKENDS)
                           + " is usable on this CPU")
    local = measure_local(bes, prof, progress=progress)
    frames = [local.assign(host=os.uname().nodename)]
    if sweeps:
        if progress:
            progress("sweeps (worker processes)")
        frames.append(measure_sweeps(bes, prof, usable_backends(backends or RECORD_BACKENDS)))
    return pd.concat(frames, ignore_index=True)



def main(argv: list[str]) -> int:
    """``vgkernels bench targets``: measure, print the targets table, optionally save."""
    import argparse
    import sys

    from ..analysis import targets as at

    p = argparse.ArgumentParser(prog="vgkernels bench targets",
                                description="Issue 12's targets on this host: bound, floor, "
                                            "sawtooth, placement, records, open, peers.")
    p.add_argument("--backends", help="comma list (default: "
                   + ",".join(BACKENDS) + ", the usable ones; target 5 also on "
                   + ",".join(b for b in RECORD_BACKENDS if b not in BACKENDS) + ")")
    p.add_argument("--profile", choices=sorted(PROFILES), default="full")
    p.add_argument("--no-sweeps", action="store_true",
                   help="skip the worker sweeps (peers, records, open)")
    p.add_argument("--out", help="write the raw rows (Parquet) and the table (CSV) here")
    args = p.parse_args(argv)
    names = [b.strip() for b in args.backends.split(",")] if args.backends else None
    raw = measure(names, args.profile, sweeps=not args.no_sweeps,
                  progress=lambda m: print(m, file=sys.stderr))
    tab = at.table(raw)
    if args.out:
        from pathlib import Path

        d = Path(args.out)
        d.mkdir(parents=True, exist_ok=True)
        raw.astype({c: str for c in raw.columns if raw[c].dtype == object}).to_parquet(
            d / "targets-raw.parquet")
        tab.to_csv(d / "targets.csv", index=False)
    with pd.option_context("display.width", 200, "display.max_rows", None):
        print(tab.to_string(index=False, float_format=lambda v: f"{v:.4g}"))
        print()
        print(at.aes_rate(raw).to_string(index=False, float_format=lambda v: f"{v:.3f}"))
        print()
        _print_replays(raw)
    print(f"\n{int(tab['holds'].sum())} of {int(tab['holds'].notna().sum())} checks hold "
          "(minimum of the samples; shared machines inflate the slow side)")
    return 0


__all__ = ["BACKENDS", "BULK", "PROFILES", "RECORD_BACKENDS", "Profile", "main", "main_replay",
           "measure", "measure_local", "measure_replays", "measure_sweeps", "paired_rows",
           "remainder_blocks", "usable_backends"]
