"""01_inventory: the CPU, the backends, the kernel sets built, their size and compile time,
and a quick correctness check."""

from __future__ import annotations

import re
import statistics
import time
from collections.abc import Iterable, Sequence
from typing import Any

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns

from .. import elf, jit
from ..backends import BACKENDS, availability, choose, get
from ..build import kernels
from ..cpu import FEATURES, host_features, usable_features
from ..kernels import generate
from ..processes import spawn_map
from ..selfcheck import check_backend
from ..variant import Variant
from .session import Profile, empty_figure, fmt_list, fmt_range, get_profile, plural

# -- CPU and backends ------------------------------------------------------------------------


def cpu_table() -> pd.DataFrame:
    """One row per feature vgkernels knows: does the host have it, is it usable (after
    ``VG_CPU_FEATURES``)."""
    host, use = host_features(), usable_features()
    return pd.DataFrame([{"feature": f, "llvm name": ll, "host": f in host, "usable": f in use}
                         for f, ll in FEATURES.items()])


def backend_table() -> pd.DataFrame:
    """The backend table with each row's availability here."""
    avail = availability()
    return pd.DataFrame([{
        "backend": b.name, "usable": avail[b.name] is None, "reason": avail[b.name] or "",
        "llvm_cpu": getattr(b, "llvm_cpu", None) or "host", "width": b.width,
        "group": b.group, "groups": ", ".join(map(str, b.groups)),
        "features": ", ".join(sorted(b.features)) or "-", "two_slice": b.two_slice,
        "masked": b.masked, "karatsuba": b.karatsuba_for(), "skew": b.skew,
        "copy_below": f"{b.copy_below[0]}, {b.copy_below[1]}", "notes": b.notes}
        for b in BACKENDS])


def variants(backend: str, profile: str | Profile) -> list[Any]:
    """The variants the inventory builds: tail=full (the default) and tail=split; the full
    profile also every group size the generator accepts."""
    be = get(backend)
    prof = get_profile(profile)
    out = [Variant(tail="full"), Variant(tail="split")]
    if prof.full:
        out += [Variant(tail=t, group=g) for g in be.groups if g != be.group
                for t in ("full", "split")]
    return [v.resolved(be) for v in out]


# -- sizes of what was built -------------------------------------------------------------------


_DEFINE = re.compile(r'^define\b.*?@"?([\w.$]+)"?\s*\(')
_LABEL = re.compile(r'^"?([\w.$]+)"?:')
_TYPE_FN = re.compile(r'^\s*\.type\s+"?([\w.$]+)"?\s*,\s*@function', re.M)


def ir_function_lines(ir_text: str) -> dict[str, int]:
    """Non-blank lines of each function defined in LLVM IR text (``define`` .. ``}``)."""
    out: dict[str, int] = {}
    cur = None
    for line in ir_text.splitlines():
        if cur is None:
            m = _DEFINE.match(line)
            if m:
                cur, out[m.group(1)] = m.group(1), 0
            continue
        if line.startswith("}"):
            cur = None
        elif line.strip():
            out[cur] += 1
    return out


def asm_function_lines(asm: str) -> dict[str, int]:
    """Instructions of each function in assembly text (lines that are neither labels,
    directives nor comments), from its label to its ``.Lfunc_end`` / ``.size``."""
    funcs = set(_TYPE_FN.findall(asm))
    out: dict[str, int] = {}
    cur = None
    for line in asm.splitlines():
        s = line.strip()
        if not s:
            continue
        m = _LABEL.match(s)
        if m and m.group(1) in funcs:
            cur, out[m.group(1)] = m.group(1), 0
            continue
        if cur is None:
            continue
        if s.startswith(".Lfunc_end") or s.startswith(".size"):
            cur = None
            continue
        if s.startswith((".", "#")) or s.endswith(":"):
            continue
        out[cur] += 1
    return out


def function_sizes(k: Any, asm: str | None = None) -> pd.DataFrame:
    """Per function of a compiled kernel set: IR lines (generated), assembly instructions and
    machine-code bytes (ELF symbol size)."""
    syms = {s.name: s for s in elf.symbols(k.library.obj)}
    ir_lines = ir_function_lines(k.ir())
    asm_lines = asm_function_lines(k.asm() if asm is None else asm)
    names = sorted({n for n, s in syms.items() if s.type == elf.STT_FUNC} | set(asm_lines))
    rows = []
    for n in names:
        short = n[len(k.prefix) + 1:] if n.startswith(k.prefix + "_") else n
        rows.append({"function": short, "symbol": n, "exported": n.startswith(k.prefix + "_"),
                     "ir_lines": ir_lines.get(n), "asm_lines": asm_lines.get(n),
                     "obj_bytes": syms[n].size if n in syms else None})
    df = pd.DataFrame(rows)
    for c in ("ir_lines", "asm_lines", "obj_bytes"):
        df[c] = df[c].astype("Int64")
    return df


def kernel_sizes(sets: Sequence[Any]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(per kernel set, per function) size tables of compiled kernel sets."""
    per_fn, per_set = [], []
    for k in sets:
        asm = k.asm()
        fn = function_sizes(k, asm).assign(backend=k.backend.name, variant=k.variant.tag(),
                                           tail=str(k.variant.tail))
        per_fn.append(fn)
        secs = elf.section_sizes(k.library.obj)
        per_set.append({
            "backend": k.backend.name, "variant": k.variant.tag(), "tail": str(k.variant.tail),
            "group": k.variant.group, "prefix": k.prefix,
            "functions": int(len(fn)), "ir_lines": len(k.ir().splitlines()),
            "opt_ir_lines": len(k.library.optimised_ir().splitlines()),
            "asm_lines": int(sum(asm_function_lines(asm).values())),
            "text_bytes": sum(v for n, v in secs.items() if "text" in n),
            "rodata_bytes": sum(v for n, v in secs.items() if n.startswith(".rodata")),
            "obj_bytes": len(k.library.obj)})
    fn_df = pd.concat(per_fn, ignore_index=True) if per_fn else pd.DataFrame()
    if len(fn_df):
        fn_df = fn_df[["backend", "variant", "tail", "function", "exported", "ir_lines",
                       "asm_lines", "obj_bytes", "symbol"]]
    return pd.DataFrame(per_set), fn_df


def _sizes_of(case: tuple[str, Variant]) -> tuple[pd.DataFrame, pd.DataFrame]:
    return kernel_sizes([kernels(*case)])


def kernel_sizes_of(pairs: Iterable[tuple[str, Variant]], workers: int = 0
                    ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """`kernel_sizes` of these (backend, variant) sets, each built (through the disk cache)
    and listed in a spawned process (``workers``; 0: one per CPU): the build, the assembly
    listing and the optimised IR are each seconds of one core."""
    parts = spawn_map(_sizes_of, pairs, workers)
    return (pd.concat([p[0] for p in parts], ignore_index=True),
            pd.concat([p[1] for p in parts], ignore_index=True))


# -- compile times -----------------------------------------------------------------------------


def compile_times(backend: str, variant: Any, warm_repeats: int = 3) -> dict[str, Any]:
    """Generate the IR, compile it without the cache (cold), then load it from the disk cache
    (warm: the fastest of ``warm_repeats``).  In this process: LLVM is already initialised."""
    be = get(backend)
    cpu_name = getattr(be, "llvm_cpu", None)  # as vgkernels.build compiles it
    t0 = time.perf_counter()
    prefix, text = generate(be, variant)
    gen = time.perf_counter() - t0
    t0 = time.perf_counter()
    lib = jit.compile_ir(prefix, text, be.llvm_features, cpu_name, use_cache=False)
    cold = time.perf_counter() - t0
    jit.compile_ir(prefix, text, be.llvm_features, cpu_name)  # make sure the cache holds it
    warm = []
    for _ in range(max(1, warm_repeats)):
        t0 = time.perf_counter()
        w = jit.compile_ir(prefix, text, be.llvm_features, cpu_name)
        warm.append(time.perf_counter() - t0)
    return {"backend": backend, "variant": variant.tag(), "tail": str(variant.tail),
            "generate_s": gen, "cold_compile_s": cold, "llvm_compile_s": lib.compile_seconds,
            "warm_load_s": min(warm), "warm_from_cache": w.from_cache,
            "obj_bytes": len(lib.obj)}


def compile_table(backends: Sequence[str], profile: str | Profile) -> pd.DataFrame:
    """Generation, cold compile and warm load times: of every kernel set the profile builds
    (full), else of each backend's default set (a cold compile is seconds of one core, done
    again here only to time it)."""
    prof = get_profile(profile)
    return pd.DataFrame([compile_times(b, v) for b in backends
                         for v in variants(b, prof)[:None if prof.full else 1]])


# -- correctness -------------------------------------------------------------------------------


def selfcheck_table(backends: Sequence[str], cases: int) -> pd.DataFrame:
    """vgkernels.selfcheck per backend: random cases against the reference model and
    cryptography (plus Wycheproof vectors when the test extra is installed)."""
    avail = availability()
    rows = []
    for name in backends:
        if avail[name] is not None:
            rows.append({"backend": name, "cases": 0, "ok": None, "failures": 0,
                         "detail": f"not run: {avail[name]}", "seconds": 0.0})
            continue
        t0 = time.perf_counter()
        r = check_backend(get(name), cases)
        rows.append({"backend": name, "cases": r.cases, "ok": r.ok, "failures": len(r.failures),
                     "detail": "; ".join(r.failures[:3]), "seconds": time.perf_counter() - t0})
    return pd.DataFrame(rows)


# -- plots ---------------------------------------------------------------------------------------


def plot_compile_times(times: pd.DataFrame):
    """IR generation and cold compile (seconds) beside the warm load from the disk cache
    (milliseconds: on the seconds axis its bar would be invisible), legends outside the
    bars."""
    if times.empty:
        return empty_figure("no kernel set was compiled", "Compile times")
    rows = max(2, times["backend"].nunique())
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 0.55 * rows * 2 + 1.2),
                                   gridspec_kw={"width_ratios": [2, 1]})
    slow = times.melt(id_vars=["backend", "tail"], value_vars=["generate_s", "cold_compile_s"],
                      var_name="step", value_name="seconds")
    slow["step"] = slow["step"].map({"generate_s": "generate IR",
                                     "cold_compile_s": "cold compile"})
    sns.barplot(data=slow, x="seconds", y="backend", hue="step", ax=ax1, errorbar=None)
    ax1.set_title("IR generation and cold compile (s)")
    ax1.set_ylabel("")
    ax1.legend(loc="upper center", bbox_to_anchor=(0.5, -0.3), ncol=2, frameon=False)
    warm = times.assign(ms=times["warm_load_s"] * 1000)
    sns.barplot(data=warm, x="ms", y="backend", hue="tail", ax=ax2, errorbar=None)
    ax2.set_title("warm load from the disk cache (ms)")
    ax2.set_xlabel("milliseconds")
    ax2.set_ylabel("")
    ax2.legend(title="tail", loc="upper center", bbox_to_anchor=(0.5, -0.3), ncol=2,
               frameon=False)
    fig.suptitle("Per kernel set: generate + compile cold, or load warm", y=1.02)
    fig.tight_layout()
    return fig


# -- prose ---------------------------------------------------------------------------------------


def recommendation(backends: pd.DataFrame, check: pd.DataFrame) -> str:
    """What to use on this host: the best usable backend, unless its self-check failed."""
    best = choose().name
    bad = set(check.loc[check["ok"].notna() & ~check["ok"].fillna(True).astype(bool),
                        "backend"]) if len(check) else set()
    if bad:
        return (f"do not use {fmt_list(sorted(bad))} on this host: the self-check failed "
                "(see below).")
    usable = backends[backends["usable"]]
    checked = bool(len(check)) and bool(check["ok"].notna().any())
    return (f"use `{best}` here (the default: the best of the {len(usable)} usable "
            "backends)" + ("; every checked backend agrees with the reference model."
                           if checked else "."))


def _host_lines(cpu: Any, backends: pd.DataFrame) -> list[str]:
    """The host's features, and which backends it can use (why not the others)."""
    usable = backends[backends["usable"]]
    lines = [f"The host is **{cpu.model}** (LLVM target `{cpu.llvm_cpu}`) with "
             f"{len(cpu.flags)} of the features vgkernels knows: {', '.join(cpu.flags) or 'none'}"
             + (f"; usable after `VG_CPU_FEATURES`: {', '.join(cpu.usable) or 'none'}"
                if set(cpu.usable) != set(cpu.flags) else "") + "."]
    lines.append(f"{len(usable)} of {len(backends)} backends "
                 f"{'is' if len(usable) == 1 else 'are'} usable here; the default (best) is "
                 f"`{choose().name}`.")
    for r in backends[~backends["usable"]].itertuples():
        lines.append(f"`{r.backend}` is not usable: {r.reason}.")
    return lines


def _size_lines(sets: pd.DataFrame) -> list[str]:
    """Object sizes of the kernel sets, and what tail=split adds over tail=full."""
    big = sets.loc[sets["obj_bytes"].idxmax()]
    small = sets.loc[sets["obj_bytes"].idxmin()]
    lines = [f"{plural(len(sets), 'kernel set')} built; objects from "
             f"{small.obj_bytes / 1024:.1f} KiB (`{small.backend}`, {small.variant}) to "
             f"{big.obj_bytes / 1024:.1f} KiB (`{big.backend}`, {big.variant}), "
             f"{fmt_range(sets['asm_lines'].min(), sets['asm_lines'].max(), ',.0f')} "
             "instructions."]
    wide = sets.pivot_table(index=["backend", "group"], columns="tail", values="obj_bytes",
                            observed=True)
    if {"full", "split"} <= set(wide.columns):
        growth = (wide["split"] / wide["full"] - 1).dropna()
        if len(growth):
            lines.append("`tail=split` objects are "
                         f"{fmt_range(100 * growth.min(), 100 * growth.max(), '+.0f', '%')}"
                         " larger than `tail=full` ones (the separate ctr32 + ghash "
                         "tail).")
    return lines


def _selfcheck_line(check: pd.DataFrame) -> str:
    """The self-check's verdict over the backends it ran on."""
    ran = check[check["ok"].notna()]
    bad = ran[~ran["ok"].astype(bool)]
    if len(ran) and not len(bad):
        return (f"Self-check: {'all ' if len(ran) > 1 else ''}"
                f"{plural(len(ran), 'checked backend')} ({fmt_list(ran['backend'])}) "
                f"{'agrees' if len(ran) == 1 else 'agree'} with the reference model "
                f"and cryptography on {int(ran['cases'].min())} random cases"
                f"{' each' if len(ran) > 1 else ''}.")
    if len(bad):
        return f"Self-check **FAILED** on {fmt_list(bad['backend'])}: " + "; ".join(bad["detail"])
    return "Self-check: no backend could be checked here."


def conclusions(cpu: Any, backends: pd.DataFrame, sets: pd.DataFrame, fns: pd.DataFrame,
                times: pd.DataFrame, check: pd.DataFrame) -> list[str]:
    """Computed statements about the host, backends, code size, compile times and the self-check."""
    lines = _host_lines(cpu, backends)
    if len(sets):
        lines += _size_lines(sets)
    if len(fns):
        ex = fns[fns["exported"]].dropna(subset=["obj_bytes"])
        if len(ex):
            top = ex.loc[ex["obj_bytes"].astype(float).idxmax()]
            lines.append(f"The largest exported function is `{top.function}` of `{top.backend}` "
                         f"({int(top.obj_bytes):,} bytes, {int(top.asm_lines or 0):,} "
                         "instructions).")
    if len(times):
        cold = times["cold_compile_s"]
        warm = times["warm_load_s"] * 1000
        lines.append(f"A cold compile (IR to optimised object, no cache) takes "
                     f"{fmt_range(cold.min(), cold.max(), '.2f', ' s')} per kernel set (median "
                     f"{statistics.median(cold):.2f} s), plus {times['generate_s'].median():.2f} s"
                     f" to generate the IR; loading from the disk cache takes "
                     f"{fmt_range(warm.min(), warm.max(), '.0f', ' ms')}.")
    if len(check):
        lines.append(_selfcheck_line(check))
    return lines
