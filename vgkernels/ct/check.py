"""One backend (and variant) through both checks: taint over its optimised IR, then its object
code, each machine finding tied to the IR finding that explains it (or reported as an error)."""

from __future__ import annotations

import functools
import hashlib
import time
from dataclasses import dataclass

from .. import jit
from ..backends import Backend, get
from ..kernels import generate
from ..variant import Variant
from . import machine, taint

# The CPU the object code is checked for when none is named: the backend's own model, else one
# that has every feature of every backend, so vaes_avx512 is checked where the host lacks it.
CHECK_CPU = "znver4"


@dataclass
class Report:
    name: str  # backend or control
    variant: str
    cpu: str
    ir: taint.TaintResult
    machine: dict[str, machine.MachineFunction]
    seconds: float

    @property
    def errors(self) -> list[str]:
        out = [f.describe() for f in self.ir.errors()]
        out += [f"[error] machine {m.kind} ({m.origin}) in {m.function} at {m.address:x}: "
                f"{m.instruction}" for m in self.machine_findings() if m.explained_by is None]
        return out

    def machine_findings(self) -> list[machine.MachineFinding]:
        return [x for fn in self.machine.values() for x in fn.findings]

    def summary(self) -> dict[str, object]:
        fs = self.ir.findings
        return {
            "name": self.name, "variant": self.variant, "cpu": self.cpu,
            "ir_functions": len(self.ir.functions), "ir_instructions": self.ir.instructions,
            "contexts": self.ir.contexts,
            "asm_functions": len(self.machine),
            "asm_instructions": sum(len(f.insns) for f in self.machine.values()),
            "cond_jumps": sum(f.cond_jumps for f in self.machine.values()),
            "cmovs": sum(f.cmovs for f in self.machine.values()),
            "indexed_accesses": sum(f.indexed for f in self.machine.values()),
            "errors": len(self.errors),
            "known_j0": sum(f.severity == "known" for f in fs),
            "select_warnings": sum(f.kind == "select" for f in fs),
            "verdicts": len(self.ir.declassified),
            "seconds": round(self.seconds, 2),
        }


def explain(ir: taint.TaintResult, mach: dict[str, machine.MachineFunction]) -> None:
    """Tie each machine finding to the IR finding of its function that accounts for it."""
    by_fn: dict[str, list[taint.Finding]] = {}
    for f in ir.findings:
        by_fn.setdefault(f.function, []).append(f)
    verdict_fns = {d.function for d in ir.declassified}
    for fn in mach.values():
        irf = by_fn.get(fn.name, [])
        errors = [f for f in irf if f.severity == "error"]
        known = [f for f in irf if f.severity == "known"]
        for m in fn.findings:
            if m.origin == "vector" and m.kind == "jump" and known:
                m.explained_by = f"J0 counter fast path (known, bounded): {known[0].instruction}"
            elif m.origin == "vector" and m.kind == "jump" and fn.name in verdict_fns:
                m.explained_by = "tag verdict (declassified): " + next(
                    d.instruction for d in ir.declassified if d.function == fn.name)
            elif m.origin == "stack byte" and not errors and fn.name in ir.functions:
                m.explained_by = "a spilled i1: the IR has no secret condition in this function"


def check_ir(name: str, variant: str, ir_text: str, prefix: str, obj: bytes, cpu: str,
             roles: dict[str, list[str]] | None = None) -> Report:
    """Both checks over one module: ``ir_text`` (optimised) and the ``obj`` compiled from it."""
    t0 = time.perf_counter()
    ir = taint.analyse(ir_text, prefix, roles)
    mach = machine.check_object(obj)
    explain(ir, mach)
    return Report(name, variant, cpu, ir, mach, time.perf_counter() - t0)


def optimised(ir_text: str, llvm_features: str, cpu: str) -> tuple[str, bytes]:
    """(optimised IR, object code) of a module for ``cpu``, through the disk cache."""
    key = jit.cache_key(ir_text, llvm_features, cpu)
    d = jit.cache_dir()
    ll, ob = d / f"ct-{key}.ll", d / f"ct-{key}.o"
    if ll.exists() and ob.exists():
        return ll.read_text(), ob.read_bytes()
    tm = jit.target_machine(llvm_features, cpu, aot=True)
    mod = jit.optimise(ir_text, tm)
    text, obj = str(mod), tm.emit_object(mod)
    tag = hashlib.sha256(text.encode()).hexdigest()[:8]
    for path, data in ((ll, text.encode()), (ob, obj)):
        tmp = path.with_suffix(f".{tag}.tmp")
        tmp.write_bytes(data)
        tmp.replace(path)
    return text, obj


@functools.cache
def check_backend(backend: str | Backend, variant: Variant | None = None,
                  cpu: str | None = None) -> Report:
    """Constant-time check of a backend's kernels (any backend, whatever the host has)."""
    be = backend if isinstance(backend, Backend) else get(backend)
    cpu = cpu or be.llvm_cpu or CHECK_CPU
    v = (variant or Variant()).resolved(be, cpu)
    prefix, text = generate(be, v, cpu=cpu)
    t0 = time.perf_counter()
    opt, obj = optimised(text, be.llvm_features, cpu)
    r = check_ir(be.name, v.tag(), opt, prefix, obj, cpu)
    r.seconds = time.perf_counter() - t0
    return r


__all__ = ["CHECK_CPU", "Report", "check_backend", "check_ir", "explain", "optimised"]
