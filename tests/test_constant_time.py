"""The portable backend is constant-time by construction: no table (no memory index that data
could choose) and no branch on data.  These checks read the generated IR and machine code."""

from __future__ import annotations

import re

from vgkernels.backends import get
from vgkernels.build import kernels
from vgkernels.kernels import generate


def _body(asm: str, fn: str) -> str:
    return asm.split(f"{fn}:", 1)[1].split(".Lfunc_end", 1)[0]


def test_portable_ir_has_no_tables_and_no_intrinsics():
    _, text = generate(get("portable"))
    assert "llvm.x86." not in text
    assert not re.findall(r"^@\S+ = .*\[\d+ x i8\]", text, re.M), "no lookup tables"


def test_portable_round_and_multiply_do_not_branch():
    asm = kernels("portable").asm()
    for fn in ("vg.portable.aesenc", "vg.portable.aesenclast"):
        jumps = re.findall(r"^\s+(j[a-z]+)\s", _body(asm, fn), re.M)
        assert jumps == [], f"{fn} branches: {jumps}"
    # the bit-serial multiply may keep its loop (64 iterations, a public count): one back-edge
    jumps = re.findall(r"^\s+(j[a-z]+)\s", _body(asm, "vg.portable.clmul"), re.M)
    assert len([j for j in jumps if j != "jmp"]) <= 1, jumps


def test_portable_targets_baseline_x86_64():
    asm = kernels("portable").asm()
    mnemonics = set(re.findall(r"^\s+([a-z][a-z0-9]*)\s", asm, re.M))
    newer = {m for m in mnemonics if m.startswith(("v", "pshufb", "pclmul", "aes", "pblend",
                                                   "pinsr", "pextr", "ptest"))}
    assert not newer, f"portable code uses instructions beyond SSE2: {sorted(newer)[:10]}"


def test_static_table_checks_in_worker_processes():
    """Notebook 08's static table runs its checks in spawned processes: one row per backend
    and variant in order (the quick profile's two tails), the controls' row last, and the
    portable backend clean in both."""
    from vgkernels.report import constant_time as rct
    from vgkernels.report.session import get_profile

    df, ctl = rct.static_table(["portable"], get_profile("quick"), workers=2)
    assert df["name"].tolist() == ["portable", "portable", ctl.name]
    assert ["tail=split" in v for v in df["variant"][:2]] == [False, True]
    assert (df["errors"][:2] == 0).all() and (df["ir_instructions"][:2] > 0).all()
