"""Issue 12's machine bounds, generated as IR and timed by the driver like a kernel.

* :func:`kernel_mix`: what the stitched loop a backend runs long messages in issues per
  iteration (AES instructions and carry-less multiplies, by vector width), counted in its own
  assembly (the loop that ``vgkernels.asm.regions`` finds: the lead loop where there is one),
  next to what the generator's parameters say (:func:`param_mix`).
* :func:`mix_loop_ir`: a loop of exactly that mix and nothing else (no loads, no XOR, no
  shuffle), with at least ``MIN_CHAINS`` independent AES chains in flight (latency 4 and 2 per
  cycle need 8) and the multiplies on separate short chains: the instruction-mix bound.  With
  no multiplies it is the AES-only (CTR) bound; with other chain counts it answers how many
  ``vaesenc`` a core issues per cycle at a width.
* :func:`floor_chain_ir`: the 16-byte seal's serial latency floor as a dependent chain: one
  block's AES rounds, the XOR with the plaintext, the GHASH multiply of that ciphertext (plus
  the AAD's and length's products, precomputed off the chain) and its reduction, the XOR with
  E(J0); its result feeds the next link's AES input.

Every function has the seal signature ``(ctx, nonce, nonce_len, aad, aad_len, inout, len,
tag)`` so the driver's ``seal`` loop calls it through a pointer exactly as it calls a kernel:
``ctx`` points at a scratch block the initial values are loaded from (before the loop),
``len`` is the bytes the mix loop stands for (a multiple of :meth:`MixLoop.bytes_per_iter`) or
the floor's chain links, and the result is stored to ``tag`` so nothing is dead.
"""

from __future__ import annotations

import functools
import math
import re
from collections import Counter
from dataclasses import dataclass

from llvmlite import ir

from ..asm import regions
from ..backends import Backend, get
from ..cpu import host_cpu_name
from ..listing import assembly
from ..variant import Variant

MIN_CHAINS = 8  # vaesenc latency 4 x 2 issued per cycle
ROUNDS = {16: 10, 24: 12, 32: 14}  # AES rounds per key size (aesenc + the aesenclast)
# Dependent multiplies per chain per iteration: latency 4 each, 32 cycles, below any
# iteration's issue time (at least the AES half's 40 cycles).
CLMUL_LATENCY_BUDGET = 8
SCRATCH = 4096  # bytes the ctx argument must point at

i8 = ir.IntType(8)
i32 = ir.IntType(32)
i64 = ir.IntType(64)
ptr = ir.PointerType()
_SUFFIX = {1: "", 2: ".256", 4: ".512"}
_REG = {"x": 1, "y": 2, "z": 4}
_AES = ("aesenc", "vaesenc", "aesenclast", "vaesenclast")
_CLMUL = ("pclmulqdq", "vpclmulqdq")


def vec(w: int) -> ir.VectorType:
    return ir.VectorType(i64, 2 * w)


# ------------------------------------------------------------------------------------------
# what the kernel issues


@dataclass(frozen=True)
class Mix:
    """Instructions of one stitched-loop iteration: ``group`` blocks, AES and carry-less
    multiplies counted per vector width (1 xmm, 2 ymm, 4 zmm)."""

    group: int
    aes: tuple[tuple[int, int], ...]  # (width, count)
    clmul: tuple[tuple[int, int], ...]

    def aes_count(self) -> int:
        return sum(n for _, n in self.aes)

    def clmul_count(self) -> int:
        return sum(n for _, n in self.clmul)

    def aes_block_rounds(self) -> int:
        """Block-rounds of AES per iteration (a zmm vaesenc is 4)."""
        return sum(w * n for w, n in self.aes)


def param_mix(backend: str | Backend, variant: Variant | None = None, key_len: int = 16) -> Mix:
    """The mix the generator's parameters say for the loop long messages run in (a group of
    `Backend.lead_group` blocks, whatever the variant's group): per vector of W blocks
    ``rounds`` AES instructions (one fewer where the first round comes from the key's table:
    ``Backend.first_round``) and 3 (Karatsuba) or 4 multiplies, plus the reduction's 2 per
    group."""
    be = backend if isinstance(backend, Backend) else get(backend)
    v = (variant or Variant()).resolved(be)
    vectors = be.lead_group // be.width
    per = 3 if v.karatsuba else 4
    rounds = ROUNDS[key_len] - (1 if be.first_round else 0)
    return Mix(be.lead_group, ((be.width, vectors * rounds),),
               ((be.width, vectors * per + 2),))


def _width(ins: str) -> int:
    regs = re.findall(r"%([xyz])mm\d+", ins)
    return _REG[regs[-1]] if regs else 1


def count_mix(instructions: list[str] | tuple[str, ...], group: int) -> Mix:
    """The AES and carry-less-multiply instructions of a list of assembly lines, by width."""
    aes: Counter[int] = Counter()
    cl: Counter[int] = Counter()
    for ins in instructions:
        op = ins.split()[0] if ins.split() else ""
        if op in _AES:
            aes[_width(ins)] += 1
        elif op in _CLMUL:
            cl[_width(ins)] += 1
    return Mix(group, tuple(sorted(aes.items())), tuple(sorted(cl.items())))


@functools.cache
def bulk_loop(backend: str, variant: Variant | None = None) -> regions.Region:
    """The backend's stitched loop for long messages (AES-128, steady state, hot path) in the
    kernel's assembly for the host CPU: enc's lead loop where the backend has one
    (`vaes_avx2`: 16 blocks, 26 multiplies, where its default group of 8 issues 14), since
    that is the loop the bulk sizes run in."""
    be = get(backend)
    v = (variant or Variant()).resolved(be)
    prefix, text = assembly(be, v, host_cpu_name())
    found = regions.regions(text, prefix, be, v)
    return found.get("lead", found["stitch"])


@functools.cache
def kernel_mix(backend: str, variant: Variant | None = None) -> Mix:
    """What the backend's loop for long messages (`bulk_loop`) issues per iteration."""
    st = bulk_loop(backend, variant)
    return count_mix(st.instructions, st.blocks_per_iteration)


# ------------------------------------------------------------------------------------------
# generated loops


@dataclass(frozen=True)
class MixLoop:
    """A load-free loop: ``chains`` AES vector chains of width ``width`` doing ``rounds``
    rounds each per iteration, and ``clmul`` multiplies (per width) spread over
    ``clmul_chains`` chains and interleaved evenly with the rounds."""

    width: int
    chains: int
    rounds: int
    clmul: tuple[tuple[int, int], ...] = ()
    clmul_chains: int = 0

    @property
    def bytes_per_iter(self) -> int:
        return 16 * self.width * self.chains

    @property
    def aes_per_iter(self) -> int:
        return self.chains * self.rounds

    @property
    def clmul_per_iter(self) -> int:
        return sum(n for _, n in self.clmul)

    def name(self) -> str:
        cl = "_".join(f"{w}x{n}" for w, n in self.clmul) or "none"
        return f"vgb_mix_w{self.width}_c{self.chains}_r{self.rounds}_m{cl}_k{self.clmul_chains}"


def mix_loop(mix: Mix, width: int, aes_only: bool = False) -> MixLoop:
    """The bound loop of a kernel's mix: as many whole groups per iteration as it takes to
    have ``MIN_CHAINS`` AES chains, each doing the kernel's AES instructions per vector, the
    multiplies of those groups on enough chains that none waits on its own latency."""
    vectors = max(1, mix.group // width)  # AES vectors per group
    rounds = mix.aes_count() // vectors  # the kernel's AES instructions per vector
    groups = math.ceil(MIN_CHAINS / vectors)
    chains = vectors * groups
    if aes_only:
        return MixLoop(width, chains, rounds)
    clmul = tuple((w, n * groups) for w, n in mix.clmul)
    total = sum(n for _, n in clmul)
    k = min(MIN_CHAINS, max(1, math.ceil(total / CLMUL_LATENCY_BUDGET)))
    return MixLoop(width, chains, rounds, clmul, k if total else 0)


def _intr(module: ir.Module, name: str, ret: ir.Type, args: list[ir.Type]) -> ir.Function:
    fn = module.globals.get(name)
    return fn if fn is not None else ir.Function(module, ir.FunctionType(ret, args), name=name)


def _seal_signature() -> ir.FunctionType:
    return ir.FunctionType(i32, [ptr, ptr, i64, ptr, i64, ptr, i64, ptr])

def _loop_function(module: ir.Module, name: str
                   ) -> tuple[ir.Function, ir.IRBuilder, ir.Block, ir.Block, ir.Block]:
    """A noinline function of the seal signature (so the driver times it like a kernel) with
    its entry, loop and done blocks; the builder stands in entry."""
    f = ir.Function(module, _seal_signature(), name=name)
    f.attributes.add("noinline")
    entry, loop, done = (f.append_basic_block(n) for n in ("entry", "loop", "done"))
    return f, ir.IRBuilder(entry), entry, loop, done



def _load_vec(b: ir.IRBuilder, base: ir.Value, w: int, slot: int) -> ir.Value:
    p = b.gep(base, [ir.Constant(i64, 64 * slot)], source_etype=i8)
    ld = b.load(p, typ=vec(w))
    ld.align = 1
    return ld


def _sink(b: ir.IRBuilder, values: list[ir.Value], tag: ir.Value) -> None:
    """XOR everything into one i64 stored to ``tag`` (so no instruction is dead)."""
    acc: ir.Value | None = None
    for v in values:
        for j in range(v.type.count):
            e = b.extract_element(v, ir.Constant(i32, j))
            acc = e if acc is None else b.xor(acc, e)
    b.store(acc, tag)


def emit_mix_loop(module: ir.Module, spec: MixLoop) -> ir.Function:
    """The loop function of ``spec`` (seal signature; ``len`` bytes, rounded down to whole
    iterations)."""
    f, b, entry, loop, done = _loop_function(module, spec.name())
    ctx, _, _, _, _, _, length, tag = f.args
    w = spec.width
    key = _load_vec(b, ctx, w, 0)  # one round key: the rounds' timing does not depend on it
    states0 = [_load_vec(b, ctx, w, 1 + c % 8) for c in range(spec.chains)]
    cl_w = [cw for cw, n in spec.clmul for _ in range(n)]  # each multiply's width
    hs = {cw: _load_vec(b, ctx, cw, 20 + cw) for cw in {cw for cw, _ in spec.clmul}}
    m0 = {(k, cw): _load_vec(b, ctx, cw, 30 + k % 8) for k in range(spec.clmul_chains)
          for cw in hs}
    iters = b.udiv(length, ir.Constant(i64, spec.bytes_per_iter))
    b.cbranch(b.icmp_unsigned("==", iters, ir.Constant(i64, 0)), done, loop)

    b.position_at_end(loop)
    i = b.phi(i64, name="i")
    i.add_incoming(ir.Constant(i64, 0), entry)
    st = [b.phi(vec(w), name=f"s{c}") for c in range(spec.chains)]
    for p, v0 in zip(st, states0, strict=True):
        p.add_incoming(v0, entry)
    mph = {kc: b.phi(vec(kc[1]), name=f"m{kc[0]}w{kc[1]}") for kc in m0}
    for kc, p in mph.items():
        p.add_incoming(m0[kc], entry)
    enc = _intr(module, f"llvm.x86.aesni.aesenc{_SUFFIX[w]}", vec(w), [vec(w), vec(w)])
    last = _intr(module, f"llvm.x86.aesni.aesenclast{_SUFFIX[w]}", vec(w), [vec(w), vec(w)])
    cur = list(st)
    m = dict(mph)
    n_aes = spec.aes_per_iter
    done_cl = 0
    op = 0
    for r in range(spec.rounds):  # round-major: the chains' rounds are independent neighbours
        fn = last if r == spec.rounds - 1 else enc
        for c in range(spec.chains):
            cur[c] = b.call(fn, [cur[c], key])
            op += 1
            # multiplies spread evenly: after AES op number op, len(cl_w) * op / n_aes issued
            while done_cl < len(cl_w) * op // n_aes:
                cw = cl_w[done_cl]
                kc = (done_cl % spec.clmul_chains, cw)
                cfn = _intr(module, f"llvm.x86.pclmulqdq{_SUFFIX[cw]}", vec(cw),
                            [vec(cw), vec(cw), i8])
                m[kc] = b.call(cfn, [m[kc], hs[cw], ir.Constant(i8, (0x00, 0x11, 0x01,
                                                                     0x10)[done_cl % 4])])
                done_cl += 1
    for p, v in zip(st, cur, strict=True):
        p.add_incoming(v, loop)
    for kc, p in mph.items():
        p.add_incoming(m[kc], loop)
    nxt = b.add(i, ir.Constant(i64, 1))
    i.add_incoming(nxt, loop)
    b.cbranch(b.icmp_unsigned("<", nxt, iters), loop, done)

    b.position_at_end(done)
    fs = [b.phi(vec(w)) for _ in range(spec.chains)]
    for p, v0, v in zip(fs, states0, cur, strict=True):
        p.add_incoming(v0, entry)
        p.add_incoming(v, loop)
    fm = []
    for kc in m0:
        p = b.phi(vec(kc[1]))
        p.add_incoming(m0[kc], entry)
        p.add_incoming(m[kc], loop)
        fm.append(p)
    _sink(b, fs + fm, tag)
    b.ret(ir.Constant(i32, 0))
    return f


@dataclass(frozen=True)
class FloorChain:
    """The 16-byte seal's dependent chain at one vector width."""

    width: int
    rounds: int = ROUNDS[16]
    karatsuba: bool = True

    def name(self) -> str:
        return f"vgb_floor_w{self.width}_r{self.rounds}_k{int(self.karatsuba)}"

    def counts(self) -> tuple[int, int]:
        """(AES instructions, multiplies) per link."""
        return self.rounds, (3 if self.karatsuba else 4) + 2


def emit_floor_chain(module: ir.Module, spec: FloorChain) -> ir.Function:
    """``len`` links of: AES(x) -> c = ks ^ p -> GHASH parts of c * H^2 (+ the AAD's and the
    length block's parts, loop invariant) -> reduce -> ^ E(J0) -> x of the next link."""
    f, b, entry, loop, done = _loop_function(module, spec.name())
    ctx, _, _, _, _, _, links, tag = f.args
    w = spec.width
    vt = vec(w)
    # two round keys alternating: the latency does not depend on their values, and eleven
    # would not fit in 16 registers beside the chain's values (the loop would reload them)
    k = [_load_vec(b, ctx, w, j % 2) for j in range(spec.rounds + 1)]
    p, h, hk, ej0, a_lo, a_mi, a_hi, poly, x0 = (_load_vec(b, ctx, w, 8 + j) for j in range(9))
    b.cbranch(b.icmp_unsigned("==", links, ir.Constant(i64, 0)), done, loop)

    b.position_at_end(loop)
    i = b.phi(i64, name="i")
    i.add_incoming(ir.Constant(i64, 0), entry)
    x = b.phi(vt, name="x")
    x.add_incoming(x0, entry)
    enc = _intr(module, f"llvm.x86.aesni.aesenc{_SUFFIX[w]}", vt, [vt, vt])
    last = _intr(module, f"llvm.x86.aesni.aesenclast{_SUFFIX[w]}", vt, [vt, vt])
    cl = _intr(module, f"llvm.x86.pclmulqdq{_SUFFIX[w]}", vt, [vt, vt, i8])

    def clmul(a: ir.Value, c: ir.Value, imm: int) -> ir.Value:
        return b.call(cl, [a, c, ir.Constant(i8, imm)])

    def swap(v: ir.Value) -> ir.Value:
        mask = [j ^ 1 for j in range(2 * w)]
        return b.shuffle_vector(v, v, ir.Constant(ir.VectorType(i32, 2 * w), mask))

    s = b.xor(x, k[0])
    for r in range(1, spec.rounds + 1):
        s = b.call(last if r == spec.rounds else enc, [s, k[r]])
    c = b.xor(s, p)
    lo = b.xor(clmul(c, h, 0x00), a_lo)
    hi = b.xor(clmul(c, h, 0x11), a_hi)
    if spec.karatsuba:
        mi = b.xor(clmul(b.xor(c, swap(c)), hk, 0x00), a_mi)
        mi = b.xor(b.xor(mi, lo), hi)
    else:
        mi = b.xor(b.xor(clmul(c, h, 0x01), clmul(c, h, 0x10)), a_mi)
    lo_fold = clmul(poly, lo, 0x01)
    mi = b.xor(b.xor(mi, lo_fold), swap(lo))
    mi_fold = clmul(poly, mi, 0x01)
    y = b.xor(b.xor(hi, mi_fold), swap(mi))
    t = b.xor(y, ej0)
    x.add_incoming(t, loop)
    nxt = b.add(i, ir.Constant(i64, 1))
    i.add_incoming(nxt, loop)
    b.cbranch(b.icmp_unsigned("<", nxt, links), loop, done)

    b.position_at_end(done)
    out = b.phi(vt)
    out.add_incoming(x0, entry)
    out.add_incoming(t, loop)
    _sink(b, [out], tag)
    b.ret(ir.Constant(i32, 0))
    return f


def module_ir(loops: list[MixLoop], floors: list[FloorChain] = ()) -> str:  # type: ignore[assignment]
    """One module holding the given loops and chains (each emitted once)."""
    module = ir.Module(name="vg_bench_bound")
    for spec in dict.fromkeys(loops):
        emit_mix_loop(module, spec)
    for fl in dict.fromkeys(floors):
        emit_floor_chain(module, fl)
    return str(module)


def llvm_features(width: int) -> str:
    """Target features a loop of this width needs: the backend rows' own."""
    name = {1: "aesni_pclmul_avx", 2: "vaes_avx2", 4: "vaes_avx512"}[width]
    return get(name).llvm_features


__all__ = ["MIN_CHAINS", "ROUNDS", "SCRATCH", "FloorChain", "Mix", "MixLoop", "bulk_loop",
           "count_mix", "emit_floor_chain", "emit_mix_loop", "kernel_mix", "llvm_features",
           "mix_loop", "module_ir", "param_mix"]
