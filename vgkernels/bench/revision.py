"""``vgkernels bench rev BASE``: this tree's kernels against another revision's, in one run.

A generator change is judged by timing both versions of a kernel side by side in one process,
round-robin (the driver's ``measure``): the VM's slow phases then hit both alike, where two
separate runs differ by 15-80% for reasons outside the kernels.  BASE is a git revision of the
repository the current directory is in, or a directory holding a ``vgkernels`` package tree.

How: the base tree's generator (``vgkernels.kernels.module.generate``, run in a subprocess
with the base tree first on ``sys.path``) emits each backend's IR under the symbol prefix
``vgbase_<backend>``; this process compiles it with its own ``vgkernels.jit`` (so the pass
pipeline is the same for both sides: only the generated IR differs), builds the same cases for
both sides with the bench's case builder, which checks every case's output against the
reference model, and measures them interleaved.  The base tree must share this tree's C ABI
(signatures and context size); it is checked before anything is timed.

Per case the result is the median over rounds of the paired ratio (this tree's sample over the
base's sample in the same round), with a bootstrap interval, and the ratio of the minima.
"""

from __future__ import annotations

import ctypes
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from .. import abi, jit
from ..backends import get
from ..build import Kernels
from ..variant import Variant
from .cases import PIECE_OPS, Builder, CaseSpec, Skip, share_buffers
from .driver import Driver
from .driver import driver as get_driver

BASE_PREFIX = "vgbase"
OPS = ("seal", "open_out", "gather", "two_slice", "copy_ip")  # copy_ip: memcpy + in-place seal

# Run in the base tree: its generator, its ABI constants, as JSON on stdout.  argv: the
# prefix, the LLVM CPU whose defaults to resolve ("" for the host), the backends.  A tree
# older than per-CPU defaults (no ``cpu`` argument) generates its one default ("cpu_used":
# null).
_DUMP = r"""
import json, sys
from vgkernels import abi
from vgkernels.backends import get
from vgkernels.kernels.module import generate
out = {"ctx_size": abi.CTX_SIZE,
       "signatures": {op: sig[2] for op, sig in abi.SIGNATURES.items()},
       "backends": {}}
cpu = sys.argv[2] or None
for name in sys.argv[3:]:
    be = get(name)
    try:
        prefix, text = generate(be, None, prefix=f"{sys.argv[1]}_{name}", cpu=cpu)
        used = cpu
    except TypeError:
        prefix, text = generate(be, None, prefix=f"{sys.argv[1]}_{name}")
        used = None
    out["backends"][name] = {"prefix": prefix, "ir": text, "features": be.llvm_features,
                             "cpu": be.llvm_cpu, "cpu_used": used}
json.dump(out, sys.stdout)
"""


def _checkout(base: str, into: Path) -> Path:
    """The base tree: ``base`` itself when it is a directory with a vgkernels package, else
    ``git archive`` of that revision of the current repository, unpacked under ``into``."""
    p = Path(base)
    if (p / "vgkernels" / "__init__.py").is_file():
        return p.resolve()
    top = subprocess.run(["git", "rev-parse", "--show-toplevel"], capture_output=True,
                         text=True, check=False)
    if top.returncode:
        raise ValueError(f"{base!r} is neither a directory holding vgkernels/ nor a revision "
                         "(the current directory is not in a git repository)")
    rev = subprocess.run(["git", "rev-parse", "--verify", "--quiet", f"{base}^{{commit}}"],
                         capture_output=True, text=True, cwd=top.stdout.strip(), check=False)
    if rev.returncode:
        raise ValueError(f"{base!r} is not a revision of {top.stdout.strip()}")
    arch = subprocess.run(["git", "archive", "--format=tar", rev.stdout.strip(), "vgkernels"],
                          capture_output=True, cwd=top.stdout.strip(), check=True)
    subprocess.run(["tar", "-x", "-C", str(into)], input=arch.stdout, check=True)
    return into


def shadowed_tree() -> str | None:
    """A warning when PYTHONPATH names a tree holding vgkernels/ other than the one this
    process imported (``python -m`` puts the current directory first: run from a repository,
    it imports that repository's tree, and an experiment copy on PYTHONPATH is not what is
    measured or listed as "this tree"); else None."""
    here = Path(__file__).resolve().parents[1]
    for entry in filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep)):
        pkg = Path(entry).resolve() / "vgkernels"
        if (pkg / "__init__.py").is_file() and pkg != here:
            return (f"warning: PYTHONPATH names {pkg}, but this process imported {here} "
                    "(the current directory comes first with python -m): run from another "
                    "directory to take the PYTHONPATH tree as this tree")
    return None


def base_ir(base: str, backends: Sequence[str], cpu: str | None = None) -> dict[str, object]:
    """The base tree's IR per backend, its context size and C prototypes (see _DUMP); its
    default variant resolved for LLVM CPU ``cpu`` (None: the host), as this tree's is."""
    with tempfile.TemporaryDirectory(prefix="vgbase-") as tmp:
        tree = _checkout(base, Path(tmp))
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(
            [str(tree), *filter(None, [os.environ.get("PYTHONPATH")])])}
        res = subprocess.run([sys.executable, "-c", _DUMP, BASE_PREFIX, cpu or "", *backends],
                             capture_output=True, text=True, env=env, cwd=tmp, check=False)
    if res.returncode:
        raise RuntimeError(f"the base tree's generator failed:\n{res.stderr[-2000:]}")
    return json.loads(res.stdout)


def check_abi(dump: dict[str, object]) -> None:
    """Raise unless the base tree's C ABI is this tree's (the cases call both alike)."""
    ours = {op: sig[2] for op, sig in abi.SIGNATURES.items()}
    theirs = dump["signatures"]
    diff = sorted(op for op in set(ours) | set(theirs) if ours.get(op) != theirs.get(op))
    if dump["ctx_size"] != abi.CTX_SIZE or diff:
        raise ValueError(f"the base tree's C ABI differs (context {dump['ctx_size']} bytes, "
                         f"here {abi.CTX_SIZE}; prototypes differ for {', '.join(diff) or '-'})")


class _BaseBuilder(Builder):
    """The bench's case builder with the base tree's kernels in place of this tree's.  Its key
    context is the head's where the base's key_init writes the same bytes (and `measure`
    points its cases at the head's buffers)."""

    def __init__(self, drv: Driver, base: dict[str, Kernels], head: Builder, shift: int = 0):
        super().__init__(drv, shift=shift)
        self._base, self._head = base, head

    def kernels(self, spec: CaseSpec) -> Kernels:
        return self._base[spec.backend]

    def ctx(self, spec: CaseSpec) -> int:
        tag = (spec.backend, spec.variant(), self.material(spec)[0])
        if tag not in self._ctx:
            theirs = self._head.ctx(spec)
            if self.new_ctx(spec).read() == ctypes.string_at(theirs, abi.CTX_SIZE):
                self._ctx[tag] = self._head._ctx[tag]
        return super().ctx(spec)


def load_base(dump: dict[str, object]) -> dict[str, Kernels]:
    """Compile and load the base tree's kernels (through this tree's jit and its disk cache)."""
    out = {}
    for name, b in dump["backends"].items():
        be = get(name)
        lib = jit.compile_ir(b["prefix"], b["ir"], b["features"], b["cpu"])
        out[name] = Kernels(be, Variant().resolved(be), b["prefix"], lib, 0.0)
    return out


@dataclass(frozen=True)
class Plan:
    """What to compare: ops x shapes x sizes per backend, and how to sample."""

    backends: tuple[str, ...]
    ops: tuple[str, ...] = ("seal",)
    sizes: tuple[int, ...] = (16, 64, 256, 1024, 4096, 16384, 65536)
    shapes: tuple[str, ...] = ("one",)
    k: int = 21
    gap_ms: float = 50.0
    target_us: float = 20.0
    shift: int = 0  # bytes added to the stream buffers' page offsets (`cases.Placer`)


def _specs(plan: Plan) -> list[CaseSpec]:
    out = []
    for be in plan.backends:
        for op in plan.ops:
            if op == "two_slice" and not get(be).two_slice:
                continue
            for shape in (plan.shapes if op in PIECE_OPS else ("one",)):
                out += [CaseSpec(op, n, be, shape) for n in plan.sizes]
    return out


def measure(plan: Plan, dump: dict[str, object], drv: Driver | None = None,
            progress: Callable[[str], None] | None = None) -> pd.DataFrame:
    """Per-sample rows (``side`` head or base, ``round``, ``ns``) of every case of the plan."""
    drv = drv or get_driver()
    check_abi(dump)
    say = progress or (lambda _m: None)
    say("compiling the base tree's kernels")
    head = Builder(drv, shift=plan.shift)
    base = _BaseBuilder(drv, load_base(dump), head, plan.shift)
    cases = []
    for spec in _specs(plan):
        try:  # both sides or neither: a ratio needs the pair
            pair = [builder.build(spec) for builder in (head, base)]  # checked by the model
        except Skip as why:  # a shape the entry declines (two_slice: 16 + rest)
            say(f"skipped {spec.backend} {spec.op} {spec.shape} {spec.n}: {why}")
            continue
        # the base side on the head's buffers: a page that pairs with the stack's
        # (`cases.CTX_CANDIDATES`) slows both sides or neither; the kernels are constant
        # time, so what the other side left in a buffer does not change the timing
        share_buffers(*pair)
        if drv.call(pair[1]) != abi.RC_OK:
            raise RuntimeError(f"{spec}: the base kernel failed on the head's buffers")
        for side, c in zip(("head", "base"), pair, strict=True):
            c.label = {"backend": spec.backend, "op": spec.op, "shape": spec.shape,
                       "n": spec.n, "side": side}
            cases.append(c)
    say(f"measuring {len(cases)} cases, k={plan.k}")
    t = drv.measure(cases, k=plan.k, target_ns=plan.target_us * 1e3, gap_ms=plan.gap_ms)
    scale = 1e9 / drv.tsc_hz
    rows = [{**m.label, "round": r, "ns": x * scale}
            for m in t.results for r, x in enumerate(m.ticks)]
    return pd.DataFrame(rows)


def main(argv: list[str]) -> int:
    """``vgkernels bench rev``: print the paired table (and save the samples with --out)."""
    import argparse

    from ..analysis.compare import paired, quiet_rounds, round_slowness
    from .cli import _backends_arg, _csv_ints
    from .targets import usable_backends

    p = argparse.ArgumentParser(
        prog="vgkernels bench rev",
        description="This tree's kernels against BASE's (a git revision or a tree with "
                    "vgkernels/), timed interleaved in one process; ratio < 1: this tree is "
                    "faster.")
    p.add_argument("base", help="git revision (e.g. main, HEAD~1) or directory")
    p.add_argument("--backends", type=_backends_arg, help="default: every usable x86 backend")
    p.add_argument("--ops", default="seal",
                   help=f"comma list from {', '.join(OPS)} (default seal)")
    p.add_argument("--sizes", type=_csv_ints, help="bytes (16k = 16384)")
    p.add_argument("--shapes", default="one",
                   help="shapes for gather, two_slice, copy_ip: one, n+1, 16+rest, 1+rest")
    p.add_argument("--k", type=int, default=21, help="rounds (default 21)")
    p.add_argument("--gap-ms", type=float, default=50.0,
                   help="idle time before each round, to spread the rounds (default 50)")
    p.add_argument("--stack-offset", type=int, help="stack page offset at each call")
    p.add_argument("--cpu", type=int, help="CPU to pin to (default: the last allowed)")
    p.add_argument("--shift", type=int, default=0,
                   help="bytes added to the input's and output's page offsets (5: a TLS "
                        "payload after its record header; default 0, 64-byte aligned)")
    p.add_argument("--out", help="write the per-sample rows here (Parquet)")
    args = p.parse_args(argv)
    ops = tuple(o.strip() for o in args.ops.split(",") if o.strip())
    bad = [o for o in ops if o not in OPS]
    if bad:
        p.error(f"unknown op(s) {', '.join(bad)}; known: {', '.join(OPS)}")
    bes = usable_backends(args.backends or [b for b in
                                            ("aesni_pclmul", "aesni_pclmul_avx", "vaes_avx2",
                                             "vaes_avx512")])
    if not bes:
        p.error("none of the backends is usable on this CPU")
    plan = Plan(tuple(bes), ops, tuple(args.sizes) if args.sizes else Plan.sizes,
                tuple(s.strip() for s in args.shapes.split(",")), args.k, args.gap_ms,
                shift=args.shift)
    if warning := shadowed_tree():
        print(warning, file=sys.stderr)
    t0 = time.perf_counter()
    dump = base_ir(args.base, bes)
    drv = get_driver(args.cpu)
    if args.stack_offset is not None:
        drv.stack_offset = args.stack_offset
    df = measure(plan, dump, drv, progress=lambda m: print(m, file=sys.stderr))
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        df.to_parquet(args.out)
    keys = ["backend", "op", "shape", "n"]
    tab = paired(df, keys)
    with pd.option_context("display.width", 200, "display.max_rows", None):
        print(tab.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    slow = round_slowness(df, keys)
    quiet = len(quiet_rounds(slow))
    print(f"\nratio = this tree / {args.base}, median over {args.k} rounds of the paired "
          f"ratio (95% bootstrap interval); quiet_ratio: over the {quiet} quieter rounds (a "
          f"round's slowness, its samples over their cases' fastest: median "
          f"{slow.median():.3f}, slowest {slow.max():.3f}); {time.perf_counter() - t0:.0f} s",
          file=sys.stderr)
    return 0


__all__ = ["BASE_PREFIX", "OPS", "Plan", "base_ir", "check_abi", "load_base", "main",
           "measure"]
