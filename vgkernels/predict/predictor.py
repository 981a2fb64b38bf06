"""Compile a backend's kernels for a named CPU, find the regions, run llvm-mca on each."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import pandas as pd

from ..abi import CTX_NPOW
from ..asm import regions as asm_regions
from ..backends import Backend, get
from ..kernels import generate
from ..listing import assembly_of
from ..processes import spawn_map
from ..variant import Variant, symbol_prefix
from . import mca, model
from .targets import supported

SIZE = 16384  # the size the headline prediction is for
REGIONS = ("stitch", "leftover", "key_setup", "ctr", "ghash")




@dataclass(frozen=True)
class Result:
    backend: str
    variant: Variant  # resolved
    region: asm_regions.Region
    prediction: model.Prediction


def predict(cpu: str, backend: str | Backend, variant: Variant | None = None,
            regions: Sequence[str] = REGIONS) -> list[Result]:
    be = backend if isinstance(backend, Backend) else get(backend)
    v = (variant or Variant()).resolved(be, cpu)
    prefix, text = generate(be, v, cpu=cpu)
    return _analyse(cpu, be, v, prefix, text, regions)


def _analyse(cpu: str, be: Backend, v: Variant, prefix: str, ir_text: str,
             regions: Sequence[str]) -> list[Result]:
    """The regions of a module's IR compiled for ``cpu``, through llvm-mca."""
    found = asm_regions.regions(assembly_of(prefix, ir_text, be.llvm_features, cpu), prefix,
                                be, v)
    tool = mca.find()
    out = []
    for name in regions:
        if name not in found:
            continue
        r = found[name]
        a = mca.analyse(r.text, cpu, tool=tool)
        out.append(Result(be.name, v, r, model.predict(a, name, r.blocks_per_iteration)))
    return out


def sweep_variants(be: Backend, cpu: str | None = None) -> list[tuple[str, Variant]]:
    """The variants a prediction table covers on LLVM CPU ``cpu``: the default, every other
    group size, Karatsuba flipped, skew 0 / 6 (whichever is not the default), stitch_min =
    group."""
    d = Variant().resolved(be, cpu)
    out: list[tuple[str, Variant]] = [("default", Variant())]
    out += [(f"group={g}", Variant(group=g)) for g in be.groups if g != d.group]
    out.append((f"karatsuba={not d.karatsuba}", Variant(karatsuba=not d.karatsuba)))
    sk = 0 if d.skew else 6
    out.append((f"skew={sk}", Variant(skew=sk)))
    if d.stitch_min != d.group:
        out.append((f"stitch_min={d.group}", Variant(stitch_min=d.group)))
    return out


def rows(results: Iterable[Result], label: str = "") -> list[dict]:
    out = []
    for r in results:
        p = r.prediction
        keys = p.region == "key_setup"  # per iteration: H powers, not blocks
        out.append({
            "cpu": p.cpu, "backend": r.backend, "variant": label or r.variant.tag(),
            "group": r.variant.group, "karatsuba": bool(r.variant.karatsuba),
            "skew": r.variant.skew, "stitch_min": r.variant.stitch_min, "region": p.region,
            "instructions": p.instructions, "per_iteration": p.blocks_per_iteration,
            "cycles_per_iteration": p.cycles_per_iteration,
            "cycles_per_block": None if keys else p.cycles_per_block,
            "cycles_per_byte": None if keys else p.cycles_per_byte,
            # the H-power table (H^2 .. H^NPOW) the key setup builds; the AES key expansion
            # before it (straight-line, run once) is not in the region
            "key_setup_cycles": p.cycles_per_block * (CTX_NPOW - 1) if keys else None,
            "resource_bound": p.resource_bound, "dispatch_bound": p.dispatch_bound,
            "bottleneck": p.bottleneck,
            "busiest": ", ".join(f"{n} {c:.1f}" for n, c in p.busiest),
            "busiest_users": ", ".join(f"{m} {s:.0%}" for m, s in p.busiest_users.items()),
            "mca_dependency_share": p.mca_dependency_share,
            "mca_resource_share": p.mca_resource_share,
            "loop_hash": hashlib.sha1(r.region.text.encode()).hexdigest()[:10],
        })
    return out


@dataclass(frozen=True)
class _Task:
    """Cases whose module is the same IR: one backend and resolved variant, CPUs whose
    defaults (Karatsuba) make the same symbol prefix.  The IR is generated once (seconds of
    Python) and compiled for each CPU; only the compile depends on the CPU."""

    backend: str
    variant: Variant  # resolved
    prefix: str
    cases: tuple[tuple[int, str, str], ...]  # (row order, cpu, label)
    regions: tuple[str, ...]


def _tasks(cases: Sequence[tuple[str, str, str, Variant]], regions: Sequence[str]
           ) -> list[_Task]:
    groups: dict[tuple[str, Variant, str], list[tuple[int, str, str]]] = {}
    for i, (cpu, backend, label, v) in enumerate(cases):
        be = get(backend)
        r = v.resolved(be, cpu)
        groups.setdefault((backend, r, symbol_prefix(be, r, cpu)), []).append((i, cpu, label))
    return [_Task(b, v, p, tuple(cs), tuple(regions)) for (b, v, p), cs in groups.items()]


def _run_task(task: _Task) -> list[tuple[int, list[dict]]]:
    be = get(task.backend)
    first_cpu = task.cases[0][1]
    prefix, text = generate(be, task.variant, cpu=first_cpu)
    assert prefix == task.prefix, (prefix, task.prefix)
    return [(i, rows(_analyse(cpu, be, task.variant, prefix, text, task.regions), label))
            for i, cpu, label in task.cases]


def table(cpus: Sequence[str], backends: Sequence[str] | None = None,
          variants: str | Sequence[tuple[str, Variant]] = "sweep",
          regions: Sequence[str] = REGIONS,
          progress=None, workers: int = 1,
          sweep_cpus: Sequence[str] | None = None) -> pd.DataFrame:
    """Predictions, one row per CPU x backend x variant x region, only for the backends each
    CPU supports.  ``variants``: "sweep" (sweep_variants), "default", or (label, Variant)s.
    ``sweep_cpus``: with "sweep", only these CPUs are swept and the others get the default
    (None: every CPU is swept).

    Each case compiles the backend's kernels for the CPU (seconds) and runs llvm-mca; cases
    with the same module share its generation (`_Task`).  With ``workers`` > 1 the tasks run
    in that many spawned processes (0: one per CPU), so a script
    calling this needs the ``if __name__ == "__main__":`` guard (a notebook or the CLI does
    not); rows come back in the same order either way."""
    cases = []
    for cpu in cpus:
        for be in supported(cpu):
            if backends is not None and be.name not in backends:
                continue
            if variants == "sweep" and (sweep_cpus is None or cpu in sweep_cpus):
                vs = sweep_variants(be, cpu)
            elif variants in ("default", "sweep"):
                vs = [("default", Variant())]
            else:
                vs = list(variants)  # type: ignore[arg-type]
            cases += [(cpu, be.name, label, v) for label, v in vs]
    got: dict[int, list[dict]] = {}
    for done in spawn_map(_run_task, _tasks(cases, regions), workers):
        for i, r in done:
            got[i] = r
            if progress:
                progress(*cases[i][:3])
    return pd.DataFrame([r for i in range(len(cases)) for r in got[i]])


__all__ = ["REGIONS", "SIZE", "Result", "predict", "rows", "sweep_variants", "table"]
