"""Notebook 08 (constant time): the static checks (taint over the optimised IR, the machine
code) per backend and the negative controls, the dudect-style timing test, and conclusions
computed from both."""

from __future__ import annotations

import math
from collections.abc import Sequence

import pandas as pd

from ..ct import check, controls, timing
from ..processes import spawn_map
from ..variant import Variant
from .session import Profile, fmt_list, plural

KINDS = ("branch", "switch", "address", "division", "call", "store", "select")


def variants(profile: Profile) -> list[Variant | None]:
    """What the static table checks per backend: the default build; beyond tiny, the split tail
    the notebooks sweep against it as well."""
    return [None] if profile.tiny else [None, Variant(tail="split")]


def samples(profile: Profile) -> int:
    """Timing samples per test: tiny is a smoke test of the machinery, not a verdict."""
    return profile.pick(600, 100_000, 1_000_000)


def _row(r: check.Report) -> dict[str, object]:
    s = r.summary()
    fs = r.ir.findings
    row: dict[str, object] = {
        "name": r.name, "variant": r.variant, "cpu": r.cpu,
        "functions": s["ir_functions"], "ir_instructions": s["ir_instructions"],
        "asm_instructions": s["asm_instructions"], "cond_jumps": s["cond_jumps"],
        "cmovs": s["cmovs"], "indexed_accesses": s["indexed_accesses"]}
    for k in KINDS:
        row[k] = sum(f.kind == k and f.severity != "warning" for f in fs)
    row["select_warnings"] = s["select_warnings"]
    row["known"] = s["known_j0"]
    row["machine_unexplained"] = sum(m.explained_by is None for m in r.machine_findings())
    row["errors"] = s["errors"]
    row["seconds"] = round(r.seconds, 2)
    return row


def _static_row(case: tuple[str, Variant | None]) -> dict[str, object]:
    return _row(check.check_backend(*case))


def static_table(backends: Sequence[str], profile: Profile, workers: int = 0
                 ) -> tuple[pd.DataFrame, check.Report]:
    """One row per backend and variant checked (any backend: the check is static), then the
    controls' row; and the controls' report (for their findings).  The checks (tens of
    seconds of one core each: the taint pass is Python) run in ``workers`` spawned processes
    (0: one per CPU)."""
    rows = spawn_map(_static_row, [(b, v) for b in backends for v in variants(profile)],
                     workers)
    ctl = controls.check_controls()
    rows.append(_row(ctl))
    return pd.DataFrame(rows), ctl


def findings_table(r: check.Report) -> pd.DataFrame:
    """Every IR finding of a report, with its machine-code counterpart when there is one."""
    mach = r.machine_findings()
    rows = []
    for f in r.ir.findings:
        m = [x for x in mach if x.function == f.function and x.explained_by is None]
        rows.append({"function": f.function, "kind": f.kind, "severity": f.severity,
                     "labels": ",".join(sorted(f.labels)), "instruction": f.instruction,
                     "machine": "; ".join(f"{x.kind} at {x.address:#x}: {x.instruction}"
                                          for x in m[:2])})
    return pd.DataFrame(rows, columns=["function", "kind", "severity", "labels", "instruction",
                                       "machine"])


def timing_table(results: Sequence[timing.Result]) -> pd.DataFrame:
    """One row per timing test (vgkernels.ct.timing.Result): Welch's t and the verdict."""
    cols = ["impl", "backend", "op", "class0", "class1", "samples", "batch", "median0",
            "median1", "t", "crop", "t_raw", "abs_t", "leak", "seconds"]
    return pd.DataFrame([r.row() for r in results], columns=cols)


def _static_lines(kern: pd.DataFrame) -> list[str]:
    """The static check of the kernel sets: what was checked, the findings, J0, selects."""
    lines = []
    bad = kern[kern["errors"] > 0]
    finding_cols = [k for k in KINDS if k != "select"]
    n_find = int(kern[finding_cols].to_numpy().sum())
    lines.append(
        f"**Static check**: {plural(len(kern), 'kernel set')} "
        f"({fmt_list(sorted(set(kern['name'])))}), "
        f"{int(kern['functions'].sum())} functions, {int(kern['ir_instructions'].sum())} "
        f"optimised IR instructions and {int(kern['asm_instructions'].sum())} machine "
        f"instructions ({int(kern['cond_jumps'].sum())} conditional jumps, "
        f"{int(kern['indexed_accesses'].sum())} indexed accesses) in "
        f"{kern['seconds'].sum():.0f} s of checking (the optimised IR and object come "
        "from the disk cache when warm): "
        + (f"{n_find} secret-dependent branches, addresses, divisions or calls and no "
           "unexplained machine finding." if n_find == 0 and bad.empty else
           f"{n_find} findings, errors in {fmt_list(list(bad['name']))}."))
    known = int(kern["known"].sum())
    lines.append(
        "The counter fast path decides on a public copy of the counter (96-bit nonces: "
        "2 + blocks done; other nonce lengths take the general path), so no branch "
        "depends on J0 = GHASH_H(IV): "
        + ("none was found." if known == 0 else
           f"{known} J0 findings remain (a regression: see the table)."))
    sel = int(kern["select_warnings"].sum())
    if sel:
        lines.append(f"{plural(sel, 'select')} on secrets (warnings, to be checked in the "
                     "machine code): " + (
                         "the machine check found no unexplained jump or address."
                         if bad.empty else "see the errors above."))
    return lines


def _controls_line(c: pd.Series) -> str:
    """The negative controls: the checker must catch every leak they carry."""
    return (f"**Negative controls**: the checker reports {int(c['address'])} "
            f"secret-indexed loads (the S-box table), {int(c['branch'])} branches on "
            f"secrets (the early-exit tag compare, the plaintext-byte branch) and "
            f"{int(c['machine_unexplained'])} unexplained machine findings: "
            + ("every leak is caught." if c["address"] and c["branch"] >= 2 else
               "a leak was missed."))


def _timing_line(tt: pd.DataFrame, profile: Profile) -> str:
    """Welch's t: the kernels' largest |t|, then the controls' (which must leak)."""
    n = int(tt["samples"].max())
    k = tt[tt["impl"] == "kernel"]
    cl = tt[tt["impl"] == "control"]
    head = (f"**Timing** (Welch's t, {n:,} samples per test, |t| > {timing.THRESHOLD} a "
            "leak): ")
    if profile.tiny:
        head += ("a smoke test of the machinery at this profile: with so few samples no "
                 "verdict is drawn. ")
    if len(k):
        worst = k.loc[k["abs_t"].idxmax()]
        head += (f"The kernels' largest |t| is {worst['abs_t']:.1f} ({worst['backend']} "
                 f"{worst['op']}); " + ("none is above the threshold. " if not k["leak"].any()
                                        else f"{int(k['leak'].sum())} above it. "))
    if len(cl):
        parts = [f"{r.op} |t| = {r.abs_t:.1f}" for r in cl.itertuples()]
        head += f"The controls: {', '.join(parts)}"
        must = cl[cl["op"].isin(("open", "seal"))]
        if not profile.tiny:
            head += (" — the early-exit compare and the plaintext branch show in the time."
                     if must["leak"].all() else
                     " — a control that must leak did not show at this sample count.")
        else:
            head += "."
    return head


def conclusions(static: pd.DataFrame, tt: pd.DataFrame, profile: Profile) -> list[str]:
    """Computed statements: the static check of the kernels, the negative controls, and the
    timing test."""
    lines = []
    kern = static[static["name"] != "controls"]
    ctl = static[static["name"] == "controls"]
    if len(kern):
        lines += _static_lines(kern)
    if len(ctl):
        lines.append(_controls_line(ctl.iloc[0]))
    if len(tt):
        lines.append(_timing_line(tt, profile))
    return lines


def recommendation(static: pd.DataFrame, tt: pd.DataFrame, profile: Profile) -> str:
    """What to do, from the data: fix what the checks found, else keep them on every change."""
    kern = static[static["name"] != "controls"]
    bad = sorted(set(kern.loc[(kern["errors"] > 0) | (kern["known"] > 0), "name"]))
    if bad:
        return (f"fix the constant-time findings in {fmt_list(bad)} (see the static table) "
                "before using these kernels on secrets.")
    leaky = tt[(tt["impl"] == "kernel") & tt["leak"]] if len(tt) else tt
    if len(leaky) and not profile.tiny:
        tests = [f"{r.backend} {r.op}" for r in leaky.itertuples()]
        return (f"re-run `vgkernels ct-timing` on a quiet machine for {fmt_list(tests)}: the "
                "static check finds nothing there, the timing test does.")
    return ("nothing to fix: keep the static check (tests/test_ct.py) on every change; it "
            "covers every backend whatever the host has, and its controls prove it still "
            "catches leaks.")


def abs_t_for_plot(tt: pd.DataFrame) -> pd.DataFrame:
    """|t| per test, floored for a log axis, labelled backend / op."""
    out = tt.assign(test=tt["backend"] + " " + tt["op"],
                    abs_t_plot=tt["abs_t"].map(lambda x: max(float(x), 0.05)
                                               if not math.isnan(x) else math.nan))
    return out


__all__ = ["KINDS", "abs_t_for_plot", "conclusions", "findings_table", "recommendation",
           "samples", "static_table", "timing_table", "variants"]
