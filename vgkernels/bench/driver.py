"""The native timing driver: emitted as LLVM IR, compiled with vgkernels.jit, called per sample.

For every call signature ("kind") the module exports

    i64 vgb_run_<kind>(ptr args, i64 batch, i64 stack_offset)
        TSC ticks for ``batch`` calls between serialised reads, the stack pointer moved to
        ``stack_offset`` within a page first (-1: left alone; see _place_stack)
    i64 vgb_call_<kind>(ptr args)
        one call; its return value (to check a case)

``args`` is a block of 8-byte slots: slot 0 is the function to call, the others its arguments
in order.  The loop reloads the pointer and the arguments from memory on every call, behind a
compiler barrier, so LLVM can neither inline the callee nor hoist anything out of the loop: the
kernel is entered through a pointer with its arguments in registers, as a real caller's call.
Python makes one ctypes call per *sample*, never per operation.

Also in the module: ``vgb_tsc`` (for the TSC calibration), ``vgb_empty`` (an empty function of
the seal signature: the overhead case), ``vgb_clock`` (CLOCK_ADDS dependent register adds, one
cycle each: with the overhead case it gives the core clock during a chunk) and ``vgb_copy_ip``
(memcpy the pieces into the output, then seal in place through a pointer: what a caller like
rustls writes).
"""

from __future__ import annotations

import ctypes
import functools
import gc
import math
import os
import statistics
import struct
import sys
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import llvmlite.binding as llvm
from llvmlite import ir

from .. import abi, jit
from ..ir.core import i32, i64, ptr, void
from ..kernels import frames

CLOCK_ADDS = 2000  # dependent adds in vgb_clock
STACK_OFFSET = 2560  # page offset of the stack pointer at each timed call (see _place_stack)


# ctypes -> IR type letters: "p" pointer, "z" size_t; return "i" int, None void.
_LETTER = {ctypes.c_void_p: "p", ctypes.c_size_t: "z", ctypes.c_int: "i"}


def _param_letter(param: str) -> str:
    if "*" in param or "[" in param:
        return "p"
    if param.split()[0] in ("size_t", "uint64_t", "int64_t"):
        return "z"
    raise ValueError(f"cannot map C parameter {param!r}")


def _sig(op: str, entry: tuple[object, list[object], str]
         ) -> tuple[str | None, tuple[str, ...]]:
    """Letters of an ABI entry, from its C prototype: the prototype is what the generators emit
    (entries.py), so it wins when the ctypes argtypes of vgkernels.abi disagree with it."""
    res, argtypes, proto = entry
    params = [t.strip() for t in proto.strip()[1:-1].split(",")]
    letters = tuple(_param_letter(t) for t in params)
    from_ctypes = tuple(_LETTER[a] for a in argtypes)
    if letters != from_ctypes:
        warnings.warn(f"vgkernels.abi: {op!r} argtypes {from_ctypes} disagree with its C prototype "
                      f"{proto} ({letters}); the driver follows the prototype", RuntimeWarning,
                      stacklevel=3)
    return (None if res is None else _LETTER[res]), letters


@functools.cache
def kinds() -> dict[str, tuple[str | None, tuple[str, ...]]]:
    """Call signatures the driver can run: kernel ops (from vgkernels.abi) plus ``copy_ip``."""
    out = {op: _sig(op, abi.SIGNATURES[op]) for op in (
        "key_init", "seal", "seal_out", "seal_gather", "open", "open_out", "ctr32", "ghash",
        "encrypt_blocks")}  # key_init: the constant-time test times key setup (ct.timing)
    out["seal_two_slice"] = _sig("seal_two_slice", abi.TWO_SLICE_SIGNATURE)
    ret, gather = out["seal_gather"]
    out["copy_ip"] = (ret, ("p", *gather))  # (seal pointer, then seal_gather's arguments)
    for kind in (*PRESTORE, *SERIAL):
        out[kind] = out["seal"]
    return out


# "Nonce just written" kinds: seal, with a store of PRESTORE[kind] bytes right before each
# call (as a TLS stack writes the record's sequence number into the nonce).  Slots 9 and 10
# (after seal's eight arguments) hold the store's address and value; the value stored is
# value + the call's index, a fresh sequence number each call.
PRESTORE = {"seal_store8": 8, "seal_store4": 4}
PRESTORE_SLOTS = (9, 10)
# One call at a time: seal with an ``lfence`` after each call, so the next call begins when
# this one's instructions have completed.  Back to back, short calls overlap in the core, so
# their time per call is a throughput; this kind times a call's latency (target 3's floor is
# a latency).
SERIAL = ("seal_serial",)


def _ty(letter: str | None) -> ir.Type:
    return {"p": ptr, "z": i64, "i": i32, None: void}[letter]


def _c(x: int) -> ir.Constant:
    return ir.Constant(i64, x)


def _tsc(b: ir.IRBuilder, start: bool) -> ir.Value:
    """Serialised TSC read.  Start: lfence; rdtsc; lfence (earlier work done, later work not
    begun).  End: rdtscp (waits for the timed calls); lfence (later work not begun)."""
    regs = ["={eax}", "={edx}"] + ([] if start else ["={ecx}"])
    cons = ",".join(regs + ["~{memory}", "~{dirflag}", "~{fpsr}", "~{flags}"])
    text = "lfence\n\trdtsc\n\tlfence" if start else "rdtscp\n\tlfence"
    st = ir.LiteralStructType([i32] * len(regs))
    r = b.asm(ir.FunctionType(st, []), text, cons, [], True, name="tsc")
    lo = b.zext(b.extract_value(r, 0), i64)
    hi = b.zext(b.extract_value(r, 1), i64)
    return b.or_(b.shl(hi, _c(32)), lo)


def _barrier(b: ir.IRBuilder) -> None:
    """Compiler barrier: memory may have changed, so every slot is loaded again."""
    b.asm(ir.FunctionType(void, []), "", "~{memory}", [], True)


def _call_from_block(b: ir.IRBuilder, a: ir.Value, sig: tuple[str | None, tuple[str, ...]]
                     ) -> ir.Value:
    ret, args = sig
    fnty = ir.FunctionType(_ty(ret), [_ty(x) for x in args])
    fp = b.load(a, typ=ptr, name="fn")
    vals = [b.load(b.gep(a, [_c(8 * (j + 1))], source_etype=ir.IntType(8)), typ=_ty(x))
            for j, x in enumerate(args)]
    return b.call(_as_callee(fp, fnty), vals)


class _Callee:
    """An opaque pointer made callable: llvmlite's call needs the callee's ``function_type``,
    which a loaded ``ptr`` cannot carry."""

    def __init__(self, value: ir.Value, fnty: ir.FunctionType):
        self.value, self.function_type, self.type = value, fnty, ptr

    def get_reference(self) -> str:
        return self.value.get_reference()


def _as_callee(fp: ir.Value, fnty: ir.FunctionType) -> ir.Value:
    return _Callee(fp, fnty)  # type: ignore[return-value]


def _place_stack(b: ir.IRBuilder, page_offset: ir.Value) -> ir.Value:
    """Move the stack pointer so it sits at ``page_offset`` within a page (when >= 0): the
    callee's frame then lands at the same page offset in every process.  ASLR otherwise puts
    it anywhere, and a kernel's stack stores 4K-alias its data loads differently from one
    process to the next (a 16-byte seal took 28.7 ns in one process, 42 ns in another).
    A scan of 100 cases over offsets 0..4032 (with cases.py's buffer offsets) found 300..1400
    bad (up to +80%) and 1792..3200 flat (within ~1%); STACK_OFFSET sits in the middle.
    Returns the saved stack, for `frames.restore_stack`."""
    return frames.pad_stack(b, page_offset, 4096, when=b.icmp_signed(">=", page_offset, _c(0)))


def _prestore(b: ir.IRBuilder, a: ir.Value, kind: str, i: ir.Value) -> None:
    """The store a PRESTORE kind makes before its call (nothing for other kinds)."""
    width = PRESTORE.get(kind)
    if width is None:
        return
    at, val = (b.load(b.gep(a, [_c(8 * s)], source_etype=ir.IntType(8)), typ=t)
               for s, t in zip(PRESTORE_SLOTS, (ptr, i64), strict=True))
    st = b.store(b.trunc(b.add(val, i), ir.IntType(8 * width)), at)
    st.align = 1


def _emit_kind(module: ir.Module, kind: str, sig: tuple[str | None, tuple[str, ...]]) -> None:
    # run: the timed loop
    f = ir.Function(module, ir.FunctionType(i64, [ptr, i64, i64]), name=f"vgb_run_{kind}")
    f.attributes.add("noinline")
    f.attributes.add("nounwind")
    a, n, stack_off = f.args
    entry = f.append_basic_block("entry")
    loop = f.append_basic_block("loop")
    done = f.append_basic_block("done")
    b = ir.IRBuilder(entry)
    saved = _place_stack(b, stack_off)
    t0 = _tsc(b, start=True)
    b.cbranch(b.icmp_unsigned("==", n, _c(0)), done, loop)
    b.position_at_end(loop)
    i = b.phi(i64, name="i")
    i.add_incoming(_c(0), entry)
    _barrier(b)
    _prestore(b, a, kind, i)
    _call_from_block(b, a, sig)
    if kind in SERIAL:
        b.asm(ir.FunctionType(void, []), "lfence", "~{memory}", [], True)
    nxt = b.add(i, _c(1))
    i.add_incoming(nxt, loop)
    b.cbranch(b.icmp_unsigned("<", nxt, n), loop, done)
    b.position_at_end(done)
    t1 = _tsc(b, start=False)
    frames.restore_stack(b, saved)
    b.ret(b.sub(t1, t0))

    # call: one call, for checks
    f = ir.Function(module, ir.FunctionType(i64, [ptr]), name=f"vgb_call_{kind}")
    b = ir.IRBuilder(f.append_basic_block("entry"))
    _prestore(b, f.args[0], kind, _c(0))
    r = _call_from_block(b, f.args[0], sig)
    b.ret(_c(0) if sig[0] is None else b.sext(r, i64))


def _emit_helpers(module: ir.Module) -> None:
    f = ir.Function(module, ir.FunctionType(i64, []), name="vgb_tsc")
    b = ir.IRBuilder(f.append_basic_block("entry"))
    b.ret(_tsc(b, start=True))

    seal_ret, seal_args = kinds()["seal"]
    seal_ty = ir.FunctionType(_ty(seal_ret), [_ty(x) for x in seal_args])
    f = ir.Function(module, seal_ty, name="vgb_empty")
    f.attributes.add("noinline")
    b = ir.IRBuilder(f.append_basic_block("entry"))
    b.ret(ir.Constant(i32, 0))

    # A chain of dependent register adds (1 cycle latency each on every x86-64 core): its time
    # minus the empty call's is CLOCK_ADDS core cycles, so it measures the core clock next to
    # the cases.  A register operand, not an immediate: Intel's Golden Cove (Sapphire Rapids)
    # folds chains of `add $imm` at rename, measured at 0.34-0.38 cycles each (a 10.7 GHz
    # "core clock" with TSC 2.0 GHz), while `add %reg` and `imul` agree on one core cycle.
    f = ir.Function(module, seal_ty, name="vgb_clock")
    f.attributes.add("noinline")
    b = ir.IRBuilder(f.append_basic_block("entry"))
    chain = b.asm(ir.FunctionType(i64, [i64, i64]),
                  f".rept {CLOCK_ADDS}\n\taddq $1, $0\n\t.endr", "=r,r,0", [_c(1), _c(0)],
                  True)
    b.ret(b.trunc(b.and_(chain, _c(0)), i32))

    # copy_ip(seal, ctx, nonce, nl, aad, al, pieces, n_pieces, out, tag): a non-inlined
    # function taking the pieces, as a caller writes it: memcpy each, then seal in place.
    ret, args = kinds()["copy_ip"]
    f = ir.Function(module, ir.FunctionType(_ty(ret), [_ty(x) for x in args]), name="vgb_copy_ip")
    f.attributes.add("noinline")
    f.attributes.add("nounwind")
    seal, ctx, nonce, nl, aad, al, pieces, npieces, out, tag = f.args
    entry = f.append_basic_block("entry")
    loop = f.append_basic_block("copy")
    done = f.append_basic_block("seal")
    b = ir.IRBuilder(entry)
    b.cbranch(b.icmp_unsigned("==", npieces, _c(0)), done, loop)
    b.position_at_end(loop)
    k = b.phi(i64, name="k")
    off = b.phi(i64, name="off")
    k.add_incoming(_c(0), entry)
    off.add_incoming(_c(0), entry)
    base = b.gep(pieces, [b.shl(k, _c(4))], source_etype=ir.IntType(8))
    src = b.load(base, typ=ptr)
    ln = b.load(b.gep(base, [_c(8)], source_etype=ir.IntType(8)), typ=i64)
    memcpy = module.declare_intrinsic("llvm.memcpy", [ptr, ptr, i64])
    b.call(memcpy, [b.gep(out, [off], source_etype=ir.IntType(8)), src, ln,
                    ir.Constant(ir.IntType(1), 0)])
    k2, off2 = b.add(k, _c(1)), b.add(off, ln)
    k.add_incoming(k2, loop)
    off.add_incoming(off2, loop)
    b.cbranch(b.icmp_unsigned("<", k2, npieces), loop, done)
    b.position_at_end(done)
    total = b.phi(i64, name="total")
    total.add_incoming(_c(0), entry)
    total.add_incoming(off2, loop)
    r = b.call(_as_callee(seal, seal_ty), [ctx, nonce, nl, aad, al, out, total, tag])
    b.ret(r)


def driver_ir() -> str:
    """The driver module's IR text."""
    module = ir.Module(name="vg_bench_driver")
    for kind, sig in kinds().items():
        _emit_kind(module, kind, sig)
    _emit_helpers(module)
    return str(module)


def host_llvm_features() -> str:
    """The host's LLVM target features (the driver's own code is scalar; the kernels it calls
    were compiled with their backend's features)."""
    _init_llvm()
    return llvm.get_host_cpu_features().flatten()


@functools.cache
def _init_llvm() -> None:
    jit.init()
    llvm.initialize_native_asmparser()  # the TSC reads and the barrier are inline asm


# ------------------------------------------------------------------------------------------
# TSC calibration and pinning


def _kernel_tsc_khz() -> float | None:
    for p in ("/sys/devices/system/cpu/cpu0/tsc_freq_khz",
              "/sys/devices/system/cpu/cpu0/cpufreq/base_frequency"):
        try:
            with open(p) as f:
                return float(f.read().strip())
        except (OSError, ValueError):
            continue
    return None


def hold(seconds: float) -> None:
    """Wait ``seconds`` without sleeping: spin on the clock.  A vCPU that sleeps even 2 ms
    comes back slow on the VMs seen here (vaes_avx2 seal at 4 and 16 KiB: median of 21
    samples after 25 ms sleeps 1.5x the back-to-back median, after 2 ms 1.4x, with an untimed
    warm-up sample before each round), so the gaps that spread samples over seconds must
    keep the core busy."""
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def calibrate_tsc(read_tsc: Callable[[], int], seconds: float = 0.05, repeats: int = 3
                  ) -> float:
    """TSC ticks per second against CLOCK_MONOTONIC (perf_counter_ns) over ``repeats`` sleeps
    of ``seconds``; the median.  The TSC is invariant here (constant_tsc, nonstop_tsc), so a
    sleep measures it as well as a spin does, without heating the core."""
    rates = []
    for _ in range(repeats):
        t0 = time.perf_counter_ns()
        c0 = read_tsc()
        t1 = time.perf_counter_ns()
        time.sleep(seconds)
        t2 = time.perf_counter_ns()
        c1 = read_tsc()
        t3 = time.perf_counter_ns()
        # each TSC read sits between two clock reads: use the midpoints
        rates.append((c1 - c0) * 1e9 / ((t2 + t3) / 2 - (t0 + t1) / 2))
    return statistics.median(rates)


def pin(cpu: int | None = None) -> int | None:
    """Pin this process to one CPU (default: the last one allowed); None if that failed."""
    try:
        allowed = sorted(os.sched_getaffinity(0))
        target = allowed[-1] if cpu is None else cpu
        os.sched_setaffinity(0, {target})
        return target
    except (AttributeError, OSError, ValueError, IndexError) as e:
        warnings.warn(f"vgkernels.bench: could not pin to one CPU ({e}); samples will include "
                      "migrations", RuntimeWarning, stacklevel=2)
        return None


# ------------------------------------------------------------------------------------------
# cases and measurement


@dataclass
class Case:
    """One thing to time: a native call (``kind`` + argument block) or a Python callable."""

    label: dict[str, object]
    kind: str | None = None  # driver kind for native cases
    slots: Sequence[int] = ()  # slot 0: function address; then the arguments as integers
    py_call: Callable[[], object] | None = None  # Python-level case (e.g. cryptography)
    keep: list[object] = field(default_factory=list, repr=False)  # buffers the slots point into
    batch: int | None = None  # calls per sample, once calibrated (kept across measure calls)
    _block: ctypes.Array | None = field(default=None, repr=False)
    _block_at: int | None = field(default=None, repr=False)
    stack_offset: int | None = None  # this case's stack page offset (None: the driver's)

    def place_block(self, addr: int, room: int) -> None:
        """Keep the argument block at ``addr`` (a placed buffer of ``room`` bytes) instead of
        wherever malloc puts it: it is loaded on every call, so its page offset matters too."""
        if room < 8 * len(self.slots):
            raise ValueError("argument block does not fit")
        data = struct.pack(f"<{len(self.slots)}Q", *[s & (2**64 - 1) for s in self.slots])
        ctypes.memmove(addr, data, len(data))
        self._block_at = addr

    def address(self) -> int:
        """Address of the argument block (slot 0: the function; then its arguments)."""
        if self._block_at is not None:
            return self._block_at
        if self._block is None:
            self._block = (ctypes.c_uint64 * len(self.slots))(*[s & (2**64 - 1)
                                                                for s in self.slots])
        return ctypes.addressof(self._block)


@dataclass
class Timing:
    """A chunk's measurements plus its probes: the empty call (the driver's overhead) and the
    add chain (the core clock)."""

    results: list[Measurement]
    overhead: Measurement | None = None
    clock: Measurement | None = None

    def core_hz(self, tsc_hz: float) -> float | None:
        """Core cycles per second during the chunk (from the fastest samples)."""
        if self.overhead is None or self.clock is None:
            return None
        ticks = min(self.clock.ticks) - min(self.overhead.ticks)
        return CLOCK_ADDS * tsc_hz / ticks if ticks > 0 else None


@dataclass
class Measurement:
    """Per-operation samples of one case: ``ticks[i]`` = ticks of sample i / ``batch``."""

    label: dict[str, object]
    batch: int
    ticks: list[float]

    def stats(self, tsc_hz: float) -> dict[str, float]:
        """min / median ticks and ns and spread of the samples (see summarise)."""
        return summarise(self.ticks, tsc_hz)


NOISY_SPREAD = 0.10  # relative IQR above which a case is flagged noisy (CLI warning, banner)
N_BOOT = 200  # bootstrap replicates of the median's interval


def median_interval(ticks: Sequence[float], n_boot: int = N_BOOT, level: float = 0.95,
                    seed: int = 0) -> tuple[float, float]:
    """Bootstrap ``level`` interval of the median of ``ticks`` (percentile method, a fixed
    seed so a row reads the same every time it is summarised)."""
    import numpy as np

    a = np.asarray(ticks, dtype=float)
    if len(a) < 2:
        return float(a[0]), float(a[0])
    rng = np.random.default_rng(seed)
    meds = np.median(a[rng.integers(0, len(a), size=(n_boot, len(a)))], axis=1)
    lo, hi = np.quantile(meds, [(1 - level) / 2, (1 + level) / 2])
    return float(lo), float(hi)


def summarise(ticks: Sequence[float], tsc_hz: float) -> dict[str, float]:
    """min / median ticks and ns, the median's 95% bootstrap interval (``median_lo_ns`` ..
    ``median_hi_ns``), and ``spread`` = (q75 - q25) / median (relative IQR)."""
    s = sorted(ticks)
    q = statistics.quantiles(s, n=4, method="inclusive") if len(s) > 1 else [s[0]] * 3
    med = q[1]
    scale = 1e9 / tsc_hz
    lo, hi = median_interval(s)
    return {"min_ticks": s[0], "median_ticks": med, "min_ns": s[0] * scale,
            "median_ns": med * scale, "median_lo_ns": lo * scale, "median_hi_ns": hi * scale,
            "spread": (q[2] - q[0]) / med if med else math.nan}


class Driver:
    """The compiled driver plus this process's TSC rate and CPU pinning."""

    def __init__(self, cpu: int | None = None, pin_cpu: bool = True,
                 stack_offset: int = STACK_OFFSET):
        _init_llvm()
        self.library = jit.compile_ir("vg_bench_driver", driver_ir(), host_llvm_features())
        self._run: dict[str, Callable[[int, int], int]] = {}
        self._call: dict[str, Callable[[int], int]] = {}
        for kind in kinds():
            self._run[kind] = ctypes.CFUNCTYPE(ctypes.c_uint64, ctypes.c_void_p, ctypes.c_uint64,
                                               ctypes.c_int64)(
                self.library.address(f"vgb_run_{kind}"))
            self._call[kind] = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_void_p)(
                self.library.address(f"vgb_call_{kind}"))
        self.read_tsc = ctypes.CFUNCTYPE(ctypes.c_uint64)(self.library.address("vgb_tsc"))
        self.stack_offset = stack_offset  # page offset of the stack at the call; -1: as it is
        self.pinned_cpu = pin(cpu) if pin_cpu else None
        self.kernel_tsc_khz = _kernel_tsc_khz()
        self.tsc_hz = calibrate_tsc(self.read_tsc)

    def address(self, symbol: str) -> int:
        """The address of a symbol of the driver's own compiled code."""
        return self.library.address(symbol)

    def _probe(self, which: str, target_ns: float) -> Case:
        """The empty-call or clock probe, built once per sample length (so its batch is
        calibrated once)."""
        probes = self.__dict__.setdefault("_probes", {})
        if (which, target_ns) not in probes:
            probes[which, target_ns] = (self.empty_case() if which == "empty"
                                        else self.clock_case())
        return probes[which, target_ns]

    def empty_case(self) -> Case:
        """The overhead case: vgb_empty through the seal path (same loop, same loads)."""
        return Case({"op": "empty"}, "seal", [self.address("vgb_empty")] + [0] * 8)

    def clock_case(self) -> Case:
        """The clock probe: vgb_clock through the same path."""
        return Case({"op": "clock"}, "seal", [self.address("vgb_clock")] + [0] * 8)

    def call(self, case: Case) -> int:
        """One call of a native case; its return value (0 for void kernels)."""
        if case.kind is None:
            case.py_call()  # type: ignore[misc]
            return 0
        return self._call[case.kind](case.address())

    def sample(self, case: Case, batch: int) -> int:
        """Ticks for ``batch`` calls of the case."""
        if case.kind is not None:
            at = self.stack_offset if case.stack_offset is None else case.stack_offset
            return self._run[case.kind](case.address(), batch, at)
        f = case.py_call
        t0 = time.perf_counter_ns()
        for _ in range(batch):
            f()  # type: ignore[misc]
        return round((time.perf_counter_ns() - t0) * self.tsc_hz / 1e9)

    def calibrate(self, case: Case, target_ticks: float, warmup: int = 3) -> int:
        """A batch size making one sample last at least ``target_ticks``."""
        for _ in range(warmup):  # fault in the buffers, train the predictors
            self.sample(case, 1)
        batch = 1
        while True:
            t = min(self.sample(case, batch) for _ in range(2))
            if t >= target_ticks / 4 or batch >= 1 << 30:
                break
            batch *= 8 if t < target_ticks / 64 else 2
        return max(1, math.ceil(batch * target_ticks * 1.05 / max(t, 1)))

    def measure(self, cases: Sequence[Case], k: int = 33, target_ns: float = 20_000.0,
                probes: bool = True, trace: list[tuple[int, int]] | None = None,
                gap_ms: float = 0.0, warmup: bool | None = None, rotate: bool = False) -> Timing:
        """Time the cases round-robin: k rounds, each taking one sample of every case in turn,
        so drift hits all alike.  With ``probes`` the empty call and the clock probe go first in
        every round.  ``trace`` gets (round, case index) per sample (probes: -1 empty,
        -2 clock).

        ``gap_ms``: idle time before every round but the first, so the rounds spread over
        seconds: the VM has slow phases (0.1 s to 20 s, 15-80% slower, invisible to the clock
        probe) that swallow samples taken within milliseconds.  ``warmup`` (default: when
        there is a gap) takes one untimed sample of every case before each round, so the
        round does not time the cold caches and predictors the gap (or, in a sweep, the
        other chunks measured in between) left.  A case calibrated before (``case.batch``)
        keeps its batch.

        ``rotate``: round r starts with case r (mod the number of cases) instead of case 0, so no
        case is always the first after the gap (and its warm-up) or after a given neighbour."""
        warmup = gap_ms > 0 if warmup is None else warmup
        extra = [self._probe("empty", target_ns), self._probe("clock", target_ns)] if probes \
            else []
        ids = [-1, -2][: len(extra)] + list(range(len(cases)))
        all_cases = extra + list(cases)
        target = target_ns * self.tsc_hz / 1e9
        samples: list[list[float]] = [[] for _ in all_cases]
        gc_on = gc.isenabled()
        gc.disable()  # no collection in the middle of a Python-level peer's sample
        try:
            for c in all_cases:
                if c.batch is None:
                    c.batch = self.calibrate(c, target)
            batches = [c.batch for c in all_cases]
            for r in range(k):
                if gap_ms > 0 and r:
                    hold(gap_ms / 1000.0)
                if warmup:
                    for c, n in zip(all_cases, batches, strict=True):
                        self.sample(c, n)
                order = list(range(len(all_cases)))
                if rotate:
                    first, rest = order[: len(extra)], order[len(extra):]
                    shift = r % len(rest) if rest else 0
                    order = first + rest[shift:] + rest[:shift]
                for j in order:
                    samples[j].append(self.sample(all_cases[j], batches[j]) / batches[j])
                    if trace is not None:
                        trace.append((r, ids[j]))
        finally:
            if gc_on:
                gc.enable()
        ms = [Measurement(c.label, n, s) for c, n, s in zip(all_cases, batches, samples,
                                                            strict=True)]
        if probes:
            return Timing(ms[2:], ms[0], ms[1])
        return Timing(ms)

    def meta(self) -> dict[str, object]:
        """What the data rows record about the driver: TSC rate, pinning, stack offset."""
        return {"tsc_hz": self.tsc_hz, "kernel_tsc_khz": self.kernel_tsc_khz,
                "stack_offset": self.stack_offset,
                "pinned_cpu": self.pinned_cpu, "pid": os.getpid(),
                "python": sys.version.split()[0]}


@functools.cache
def driver(cpu: int | None = None, pin: bool = True) -> Driver:
    """This process's driver (compiled, calibrated and pinned once).  Set ``stack_offset`` on
    it to move the stack (-1: leave it where the process has it)."""
    return Driver(cpu, pin_cpu=pin)
