"""A backend's generated code as text (``vgkernels asm``): optimised assembly or LLVM IR for
any variant and target CPU, whole or one function.

Nothing is loaded or run, so the code of a backend this CPU lacks can be read too.
"""

from __future__ import annotations

import os
import re

from . import jit
from .backends import Backend, get
from .cpu import host_cpu_name
from .kernels import generate
from .variant import Variant

# LLVM CPU names offered by ``--cpu`` (any name LLVM knows works from Python; these are the
# x86-64 levels and the cores the backends target).  "host" is this machine's CPU.
CPUS = ("host", "x86-64", "x86-64-v2", "x86-64-v3", "x86-64-v4", "haswell", "skylake",
        "skylake-avx512", "icelake-server", "sapphirerapids", "znver3", "znver4", "znver5")

_LOCAL = re.compile(r"\.L[A-Za-z_]*\d[\w]*")  # .LBB3_14, .LCPI0_2, .Ltmp7, .LJTI2_0
_IR_DEFINE = re.compile(r'^define\b.*?@"?([\w.$]+)"?\s*\(')
_ASM_TYPE = re.compile(r'^\s*\.type\s+"?([\w.$]+)"?\s*,\s*@function', re.M)


def cpu_name(backend: Backend, cpu: str | None) -> str | None:
    """The LLVM CPU to schedule for: ``cpu`` ("host": this machine), else the backend's."""
    if cpu == "host":
        return host_cpu_name()
    return cpu or backend.llvm_cpu


def text(backend: str | Backend, variant: Variant | None = None, cpu: str | None = None,
         ir: bool = False) -> tuple[str, str]:
    """(symbol prefix, optimised assembly or IR) of a backend's kernels."""
    be = backend if isinstance(backend, Backend) else get(backend)
    name = cpu_name(be, cpu)
    prefix, source = generate(be, variant, cpu=name)
    tm = jit.target_machine(be.llvm_features, name)
    module = jit.optimise(source, tm)
    return prefix, (str(module) if ir else tm.emit_assembly(module))


def functions(listing: str, ir: bool = False) -> dict[str, str]:
    """Each function's text in an assembly (or IR) listing, by symbol, in order."""
    out: dict[str, list[str]] = {}
    cur: str | None = None
    if ir:
        for line in listing.splitlines():
            m = _IR_DEFINE.match(line)
            if m:
                cur = m.group(1)
                out[cur] = []
            if cur is not None:
                out[cur].append(line)
                if line.startswith("}"):
                    cur = None
        return {k: "\n".join(v) + "\n" for k, v in out.items()}
    names = set(_ASM_TYPE.findall(listing))
    for line in listing.splitlines():
        s = line.strip()
        label = s[:-1].strip('"') if s.endswith(":") else None
        if label in names:
            cur = label
            out[cur] = []
        if cur is not None:
            out[cur].append(line)
            if s.startswith(".size") or s.startswith(".Lfunc_end"):
                cur = None
    return {k: "\n".join(v) + "\n" for k, v in out.items()}


def pick(funcs: dict[str, str], prefix: str, name: str) -> str:
    """The text of one function: ``name`` is its full symbol or what follows the prefix
    (``seal`` for ``vg_vaes_avx512_seal``).  KeyError (listing the names) when none matches."""
    for sym in (name, f"{prefix}_{name}"):
        if sym in funcs:
            return funcs[sym]
    short = sorted(s.removeprefix(prefix + "_") for s in funcs)
    raise KeyError(f"no function {name!r} in {prefix}; functions: {', '.join(short)}")


def instructions(fn_text: str, prefix: str) -> list[str]:
    """A function's instructions: no directives, labels or comments, its local labels and the
    symbol prefix made neutral, so two builds compare equal when their machine code is the
    same (the constant pool's contents are not compared, only which entry is used)."""
    out = []
    for line in fn_text.splitlines():
        s = line.split("#")[0].strip()
        if not s or s.startswith(".") or s.endswith(":"):
            continue
        out.append(_LOCAL.sub(".L", s.replace(prefix, "<prefix>")))
    return out


def compare(ours: str, our_prefix: str, theirs: str, their_prefix: str) -> list[dict]:
    """Per function of two assembly listings (this tree's, another's): ``status`` same,
    changed, only here or only there, and the instruction counts (``here``, ``there``)."""
    def norm(listing: str, prefix: str) -> dict[str, list[str]]:
        return {k.replace(prefix, "<prefix>"): instructions(v, prefix)
                for k, v in functions(listing).items()}
    a, b = norm(ours, our_prefix), norm(theirs, their_prefix)
    rows = []
    for name in [*a, *(n for n in b if n not in a)]:
        status = ("only there" if name not in a else "only here" if name not in b
                  else "same" if a[name] == b[name] else "changed")
        rows.append({"function": name.replace("<prefix>", our_prefix), "status": status,
                     "here": len(a.get(name, ())), "there": len(b.get(name, ()))})
    return rows


def assembly(backend: Backend, variant: Variant, cpu: str) -> tuple[str, str]:
    """(prefix, assembly) of a backend's kernels compiled for ``cpu`` (scheduled for it,
    with the backend's features), cached on disk next to the objects (keyed like them)."""
    v = variant.resolved(backend, cpu)
    prefix, text = generate(backend, v, cpu=cpu)
    return prefix, assembly_of(prefix, text, backend.llvm_features, cpu)


def assembly_of(prefix: str, ir_text: str, features: str, cpu: str) -> str:
    """The optimised assembly of a module's IR for ``cpu``, cached on disk like the objects."""
    d = jit.cache_dir()  # None: not safe to use (jit warns); compile every time
    path = d / f"{prefix}-{jit.cache_key(ir_text, features, cpu)}.s" if d else None
    if path is not None and path.exists():
        return path.read_text()
    tm = jit.target_machine(features, cpu)
    out = tm.emit_assembly(jit.optimise(ir_text, tm))
    if path is not None:
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(out)
        os.replace(tmp, path)  # atomic: a concurrent reader never sees half a file
    return out
