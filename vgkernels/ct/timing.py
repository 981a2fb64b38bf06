"""dudect-style timing test: Welch's t-test on two input classes, timed through the native driver.

Each test has two classes of inputs for one operation (seal: zero plaintext against random
plaintext of the same length; open: a tag wrong in byte 0 against one wrong in byte 15; key
setup: a fixed key against random keys).  Samples are taken one at a time, the class of each
drawn at random (so drift, frequency changes and the other users of a shared machine hit both
classes alike), the class's input written into the buffers the case points at (outside the
timed region), then ``batch`` calls timed by the driver's serialised TSC reads.

The statistic is Welch's t on the raw samples and on the samples below pooled quantiles (dudect's
cropping: interrupts and preemption add a long right tail that hides a small shift); the largest
|t| is reported.  |t| above ``THRESHOLD`` (4.5, dudect's) with many samples is evidence of a
leak; below it says only that this many samples did not find one.

The negative controls (``vgkernels.ct.controls``), compiled through the same JIT path, run the
same tests: the early-exit tag compare and the branch on a plaintext byte must show a leak.  The
S-box control's table (256 bytes) stays in L1 between calls, so it need not show in time: the
static checks are what catch it.
"""

from __future__ import annotations

import ctypes
import functools
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass

import numpy as np
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from .. import abi, jit
from ..backends import usable
from ..bench.driver import Case, Driver, driver
from ..buffers import Buf
from ..build import kernels
from . import controls

THRESHOLD = 4.5  # dudect's: |t| above it with enough samples is a leak
CROPS = (1.0, 0.99, 0.9, 0.5)  # pooled quantiles the samples are cropped at (1.0: none)
OPS = ("seal", "open", "key_init")
SEAL_BYTES = 64  # plaintext / ciphertext length: a few blocks, so a small shift stands out
KEY = bytes(range(1, 17))
NONCE = bytes(range(12))
AAD = bytes(range(100, 113))
CLASSES = {"seal": ("zero plaintext", "random plaintext"),
           "open": ("tag wrong in byte 0", "tag wrong in byte 15"),
           "key_init": ("fixed key", "random key")}


# ------------------------------------------------------------------------------------------
# statistics


def welch_t(a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray) -> float:
    """Welch's t statistic of two samples (unequal variances): (mean a - mean b) / standard
    error.  NaN when either has fewer than two values or both have no variance."""
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if len(x) < 2 or len(y) < 2:
        return math.nan
    se2 = x.var(ddof=1) / len(x) + y.var(ddof=1) / len(y)
    if se2 == 0:
        return math.nan
    return float((x.mean() - y.mean()) / math.sqrt(se2))


def cropped_t(ticks: np.ndarray, cls: np.ndarray, crops: Sequence[float] = CROPS
              ) -> dict[float, float]:
    """Welch's t of class 0 against class 1 over the samples at or below each pooled quantile
    (1.0 keeps every sample)."""
    ticks, cls = np.asarray(ticks, dtype=float), np.asarray(cls)
    out = {}
    for q in crops:
        keep = ticks <= np.quantile(ticks, q) if q < 1.0 else np.ones(len(ticks), bool)
        out[q] = welch_t(ticks[keep & (cls == 0)], ticks[keep & (cls == 1)])
    return out


def max_abs_t(ts: dict[float, float]) -> tuple[float, float]:
    """(the t with the largest |t|, its crop) of cropped_t's result (NaN when none is finite)."""
    finite = [(abs(t), q, t) for q, t in ts.items() if not math.isnan(t)]
    if not finite:
        return math.nan, math.nan
    _, q, t = max(finite)
    return t, q


# ------------------------------------------------------------------------------------------
# targets: the three entry points of a backend's kernels or of the controls


@dataclass
class Target:
    """Where the three timed entry points are, and how to get a valid (ciphertext, tag)."""

    impl: str  # "kernel" or "control"
    backend: str
    key_init: int
    seal: int
    open: int
    # (ctx address, ciphertext length) -> (ciphertext, valid tag) for the open test
    valid: Callable[[int, int], tuple[bytes, bytes]]


def _aesgcm_valid(ctx: int, n: int) -> tuple[bytes, bytes]:
    ct = AESGCM(KEY).encrypt(NONCE, bytes(n), AAD)
    return ct[:n], ct[n:]


def kernel_target(backend: str) -> Target:
    k = kernels(backend)
    return Target("kernel", backend, k.address("key_init"), k.address("seal"),
                  k.address("open"), _aesgcm_valid)


@functools.cache
def _control_library():  # -> jit.Library
    jit.init()
    return jit.compile_ir(controls.PREFIX, controls.ir_text(), controls.FEATURES, controls.CPU)


def control_target() -> Target:
    lib = _control_library()

    def valid(ctx: int, n: int) -> tuple[bytes, bytes]:
        return bytes(n), ctypes.string_at(ctx, 16)  # the control's "computed tag": ctx[:16]
    a = {op: lib.address(f"{controls.PREFIX}_{op}") for op in OPS}
    return Target("control", "controls", a["key_init"], a["seal"], a["open"], valid)


# ------------------------------------------------------------------------------------------
# one test


@dataclass
class Result:
    impl: str
    backend: str
    op: str
    class0: str
    class1: str
    samples: int  # both classes
    samples0: int
    samples1: int
    batch: int  # calls per sample
    median0: float  # TSC ticks per sample (batch calls)
    median1: float
    t: float  # the largest |t| over the crops, signed (class 0 slower: positive)
    crop: float  # the pooled quantile it came from
    t_raw: float  # no crop
    seconds: float

    @property
    def leak(self) -> bool:
        return abs(self.t) > THRESHOLD

    def row(self) -> dict[str, object]:
        return {**asdict(self), "abs_t": abs(self.t), "leak": self.leak}


class _Prepared:
    """A case plus, per sample, what to write where before it is timed."""

    def __init__(self, case: Case, writes: list[tuple[int, np.ndarray]], keep: list[object]):
        self.case, self.writes, self.keep = case, writes, keep  # writes: (address, rows)

    def prepare(self, i: int) -> None:
        """Write sample i's inputs: the same work whatever its class (a memmove of a row of a
        table filled before timing), so the preparation cannot differ between the classes."""
        for addr, rows in self.writes:
            ctypes.memmove(addr, rows.ctypes.data + i * rows.shape[1], rows.shape[1])


def _rows(cls: np.ndarray, fixed: bytes, rng: np.random.Generator) -> np.ndarray:
    """One input per sample: ``fixed`` for class 0, random bytes for class 1."""
    rows = rng.integers(0, 256, (len(cls), len(fixed)), dtype=np.uint8)
    rows[cls == 0] = np.frombuffer(fixed, np.uint8)
    return rows


def _prepare(t: Target, op: str, cls: np.ndarray, rng: np.random.Generator) -> _Prepared:
    nb, ab = Buf.alloc(len(NONCE), NONCE), Buf.alloc(len(AAD), AAD)
    ctx = Buf.alloc(abi.CTX_SIZE, page_offset=0)
    key = Buf.alloc(len(KEY), KEY)
    init = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t)(
        t.key_init)
    if init(ctx.addr, key.addr, len(KEY)) != 0:
        raise RuntimeError(f"{t.backend}: key_init failed")
    keep: list[object] = [nb, ab, ctx, key]
    head = [ctx.addr, nb.addr, len(NONCE), ab.addr, len(AAD)]
    n = SEAL_BYTES
    if op == "key_init":
        slots = [t.key_init, ctx.addr, key.addr, len(KEY)]
        writes = [(key.addr, _rows(cls, KEY, rng))]
    elif op == "seal":
        buf, tag = Buf.alloc(n, page_offset=0), Buf.alloc(16)
        keep += [buf, tag]
        slots = [t.seal, *head, buf.addr, n, tag.addr]
        writes = [(buf.addr, _rows(cls, bytes(n), rng))]
    elif op == "open":
        ct, good = t.valid(ctx.addr, n)
        bad = np.array([list(bytes([good[0] ^ 1]) + good[1:]),
                        list(good[:15] + bytes([good[15] ^ 1]))], np.uint8)
        buf, tag = Buf.alloc(n, page_offset=0), Buf.alloc(16)
        keep += [buf, tag]
        slots = [t.open, *head, buf.addr, n, tag.addr, 16]
        # a failed open in place wipes its output: the ciphertext goes back every time
        writes = [(buf.addr, np.frombuffer(ct, np.uint8)[None, :].repeat(len(cls), 0)),
                  (tag.addr, bad[cls])]
    else:
        raise ValueError(f"unknown op {op!r}; known: {', '.join(OPS)}")
    return _Prepared(Case({"op": op}, op, slots, keep=keep), writes, keep)


WARMUP = 100  # untimed samples (both classes) before the timed ones


def run_test(drv: Driver, t: Target, op: str, samples: int, batch: int = 4, seed: int = 0
             ) -> Result:
    """``samples`` samples of ``batch`` calls each, the class of each drawn at random."""
    rng = np.random.default_rng(seed)
    cls = rng.integers(0, 2, WARMUP + samples)
    p = _prepare(t, op, cls, rng)
    ticks = np.empty(len(cls))
    sample, prepare, case = drv.sample, p.prepare, p.case
    t0 = time.perf_counter()
    for i in range(len(cls)):
        prepare(i)
        ticks[i] = sample(case, batch)
    seconds = time.perf_counter() - t0
    ticks, cls = ticks[WARMUP:], cls[WARMUP:]
    ts = cropped_t(ticks, cls)
    tmax, crop = max_abs_t(ts)
    a, b = ticks[cls == 0], ticks[cls == 1]
    c0, c1 = CLASSES[op]
    return Result(t.impl, t.backend, op, c0, c1, samples, len(a), len(b), batch,
                  float(np.median(a)) if len(a) else math.nan,
                  float(np.median(b)) if len(b) else math.nan, tmax, crop, ts[1.0], seconds)


def run(samples: int, batch: int = 4, backends: Sequence[str] | None = None,
        ops: Sequence[str] = OPS, with_controls: bool = True, drv: Driver | None = None,
        seed: int = 0) -> list[Result]:
    """Every op on every usable backend (or those named), then on the controls."""
    drv = drv or driver()
    names = list(backends) if backends else [b.name for b in usable()]
    targets = [kernel_target(b) for b in names]
    if with_controls:
        targets.append(control_target())
    return [run_test(drv, t, op, samples, batch, seed) for t in targets for op in ops]


__all__ = ["CLASSES", "CROPS", "OPS", "THRESHOLD", "Result", "Target", "control_target",
           "cropped_t", "kernel_target", "max_abs_t", "run", "run_test", "welch_t"]
