"""Target 1's hot loop replayed on its own (vgkernels.bench.replay): what each part keeps,
where its memory goes, that it runs, and the analysis of its timings."""

from __future__ import annotations

import ctypes
import math
import re

import pandas as pd
import pytest

from vgkernels import jit
from vgkernels.analysis import targets as at
from vgkernels.backends import availability, get
from vgkernels.bench import bound, replay
from vgkernels.bench.driver import Case
from vgkernels.buffers import Buf
from vgkernels.report import targets as tg

VECTOR = ("aesni_pclmul_avx", "vaes_avx2", "vaes_avx512")


@pytest.mark.parametrize("ins,kind", [
    ("vaesenc\t%ymm1, %ymm2, %ymm7", "core"), ("aesenclast\t%xmm1, %xmm2", "core"),
    ("vpclmulqdq\t$17, %zmm1, %zmm2, %zmm3", "core"), ("jae\t.LBB1_9", "branch"),
    ("vpxor\t512(%rdx,%rax), %ymm11, %ymm4", "vector"), ("vmovq\t%xmm0, %rax", "vector"),
    ("leal\t-32(%r9,%r11), %ebx", "scalar"), ("addq\t$256, %rax", "scalar")])
def test_kind(ins, kind):
    assert replay.kind(ins) == kind


@pytest.mark.parametrize("backend", VECTOR)
def test_parts_keep_what_they_say(backend):
    """``loop`` is the hot path without its branches; ``core`` its AES rounds and multiplies
    alone, as many as the bound counts; the free parts keep 4/4 .. 1/4 of the other vector
    instructions, each renamed into registers 16-31 (EVEX), and every scalar one."""
    ins, per = replay.hot_loop(backend)
    assert per == 16 * get(backend).lead_group
    loop = replay.replay(backend, "loop", ins, per)
    assert [i.split()[0] for i in loop.body] == \
        [i.split()[0] for i in ins if replay.kind(i) != "branch"]
    core = replay.replay(backend, "core", ins, per)
    mix = bound.kernel_mix(backend)
    assert core.core == len(core.body) == mix.aes_count() + mix.clmul_count()
    assert core.others == 0 and loop.others == loop.others_total > 0
    if not replay.can_free(ins):
        assert backend == "vaes_avx512"  # its loop uses all 32 registers
        with pytest.raises(ValueError, match="16-31"):
            replay.replay(backend, "free", ins, per)
        return
    scalar = [i.split()[0] for i in ins if replay.kind(i) == "scalar"]
    for part, q in (("free", 4), ("rest3", 3), ("rest2", 2), ("rest1", 1)):
        rp = replay.replay(backend, part, ins, per)
        assert rp.others == loop.others_total * q // 4
        assert [i.split()[0] for i in rp.body if replay.kind(i) == "scalar"] == scalar
        assert rp.core == core.core
        left = 0
        for i in rp.body:
            if replay.kind(i) == "vector":
                regs = [int(r) for r in re.findall(r"%[xyz]mm(\d+)", i)]
                if min(regs) < 16:  # no EVEX form: on its own registers, and counted
                    assert replay._free(i, 0) is None, i
                    left += 1
            elif replay.kind(i) == "core":
                assert all(int(r) < 16 for r in re.findall(r"%[xyz]mm(\d+)", i)), i
        assert left == rp.in_place
    # the class parts: every other instruction of their class and none of the other's
    others = [i for i in ins if replay.kind(i) == "vector"]
    classes = {c: [i.split()[0] for i in others if replay.other_class(i) == c]
               for c in ("alu", "moves")}
    assert classes["alu"] and classes["moves"]
    for part, ops in classes.items():
        rp = replay.replay(backend, part, ins, per)
        assert rp.others == len(ops) and rp.core == core.core
        kept = [replay._EVEX_RENAME.get(op, op) for op in ops]
        assert [i.split()[0] for i in rp.body if replay.kind(i) == "vector"] == kept
    # the cut parts: every instruction of the loop; their class's on registers 16-31 (or
    # counted in in_place), the other class's exactly as in the loop
    for part in replay.CUT_PARTS:
        cls = part[4:]
        rp = replay.replay(backend, part, ins, per)
        assert rp.others == loop.others_total and len(rp.body) == len(loop.body)
        left = 0
        for a, b in zip(loop.body, rp.body, strict=True):
            if replay.kind(a) != "vector" or replay.other_class(a) != cls:
                assert a == b.replace(f"vgr_{backend}_{part}_", f"vgr_{backend}_loop_")
            elif b == a.replace(f"vgr_{backend}_loop_", f"vgr_{backend}_{part}_"):
                left += 1  # no EVEX form
            else:
                assert min(int(r) for r in re.findall(r"%[xyz]mm(\d+)", b)) >= 16, b
        assert left == rp.in_place


@pytest.mark.parametrize("ins,cls", [
    ("vmovdqa	736(%rsp), %ymm1", "moves"), ("vmovdqu	%ymm4, 512(%rcx,%rax)", "moves"),
    ("vmovdqa	%ymm15, %ymm2", "moves"), ("vbroadcasti128	.LCPI1_13(%rip), %ymm10", "moves"),
    ("vpxor	512(%rdx,%rax), %ymm11, %ymm4", "alu"), ("vpshufb	%ymm15, %ymm11, %ymm11", "alu"),
    ("vpbroadcastq	%xmm0, %zmm1", "alu")])
def test_other_class(ins, cls):
    assert replay.other_class(ins) == cls


@pytest.mark.parametrize("backend", VECTOR)
def test_memory_goes_to_the_replays_scratch(backend):
    """No address depends on a general register: every memory operand (lea's arithmetic
    aside) is rip-relative into the part's own scratch, inside its windows, alignment kept."""
    ins, per = replay.hot_loop(backend)
    for part in ("loop", "core"):
        rp = replay.replay(backend, part, ins, per)
        sym = f"{rp.name()}_scratch"
        for i in rp.body:
            if i.split()[0].startswith("lea"):
                continue
            for m in re.finditer(r"([-\w.$+]*)\((%\w+)[^)]*\)", i):
                assert m.group(2) == "%rip" and m.group(1).startswith(sym + "+"), i
                assert 0 <= int(m.group(1)[len(sym) + 1:]) < (rp.windows - 1) * replay.WINDOW
    # a stack slot keeps its place in a 64-byte line
    m = replay._Memory("s")
    assert m.rewrite("vmovdqa\t-96(%rsp), %ymm1") == \
        f"vmovdqa\ts+{replay.WINDOW + (-96) % replay.WINDOW}(%rip), %ymm1"
    assert m.rewrite("leal\t-32(%r9,%r11), %ebx") == "leal\t-32(%r9,%r11), %ebx"


def test_unknown_part():
    with pytest.raises(ValueError, match="unknown replay part"):
        replay.replay("vaes_avx2", "nope", ("vaesenc\t%ymm1, %ymm2, %ymm3",), 256)


@pytest.mark.parametrize("backend", VECTOR)
def test_replays_run(drv, backend):
    """Every part this host can run, compiled as bench targets does and called through the
    driver: it returns, and only the parts with the loop's stores wrote into their scratch."""
    why = availability()[backend]
    if why is not None:
        pytest.skip(f"{backend}: {why}")
    avx512 = availability()["vaes_avx512"] is None
    parts = replay.replays(backend, avx512)
    assert [r.part for r in parts] == list(
        replay.PARTS if avx512 and backend != "vaes_avx512" else replay.PARTS[:2])
    zmm = avx512
    lib = jit.compile_ir(f"t_replay_{backend}", replay.module_ir(parts, zmm),
                         get("vaes_avx512" if zmm else backend).llvm_features)
    tag = Buf.alloc(64)
    for rp in parts:
        c = Case({}, "seal", [lib.address(rp.name()), 0, 0, 0, 0, 0, 0, 3 * rp.bytes_per_iter,
                              tag.addr])
        assert drv.call(c) == 0
        area = ctypes.string_at(lib.address(f"{rp.name()}_scratch"),
                                rp.windows * replay.WINDOW)
        stores = any(replay.kind(i) == "vector" and re.search(r"\(%rip\)$", i)
                     for i in rp.body)
        assert any(area[replay.WINDOW:]) == stores, rp.part
        assert tag.read(64) == bytes(64)  # the tag argument is not the replay's


def _rep_raw() -> pd.DataFrame:
    rows = []
    for part, others, ticks in (("loop", 120, 125), ("core", 0, 100), ("free", 120, 125),
                                ("rest3", 90, 120), ("rest2", 60, 110), ("rest1", 30, 105),
                                ("alu", 80, 121), ("moves", 40, 102),
                                ("cut_alu", 120, 126), ("cut_moves", 120, 124)):
        rows.append({"part": f"replay_{part}", "backend": "vaes_avx2", "n": 1000,
                     "min_ticks": float(ticks), "others": others, "others_total": 120,
                     "instructions": 98 + others})
    rows.append({"part": "replay_loop", "backend": "vaes_avx512", "n": 1000,
                 "min_ticks": 108.0, "others": 80, "others_total": 80, "instructions": 178})
    rows.append({"part": "replay_core", "backend": "vaes_avx512", "n": 1000,
                 "min_ticks": 100.0, "others": 0, "others_total": 80, "instructions": 98})
    rows.append({"part": "seal", "backend": "vaes_avx2", "n": 16384, "min_ticks": 1.0})
    return pd.DataFrame(rows)


def test_loop_replay_and_budget():
    rep = at.loop_replay(_rep_raw())
    v = rep[rep["backend"] == "vaes_avx2"].set_index("part")
    assert list(v.index) == list(at.REPLAY_PARTS)
    assert v.loc["loop", "vs_core"] == pytest.approx(1.25)
    assert v.loc["rest1", "ticks_per_B"] == pytest.approx(0.105)
    bud = at.loop_budget(rep).set_index("backend")
    # 1.15 lies between rest2 (60, 1.10) and rest3 (90, 1.20): 75
    assert bud.loc["vaes_avx2", "others_at_limit"] == pytest.approx(75)
    assert bud.loc["vaes_avx2", "loop_vs_core"] == pytest.approx(1.25)
    # the class parts are read, and are not points of the curve (alu's 80 -> 1.21 would
    # move the crossing below 75)
    assert bud.loc["vaes_avx2", "alu_vs_core"] == pytest.approx(1.21)
    assert bud.loc["vaes_avx2", "moves_vs_core"] == pytest.approx(1.02)
    assert bud.loc["vaes_avx2", "cut_alu_vs_core"] == pytest.approx(1.26)
    assert bud.loc["vaes_avx2", "cut_moves_vs_core"] == pytest.approx(1.24)
    assert math.isnan(bud.loc["vaes_avx512", "cut_alu_vs_core"])
    assert math.isnan(bud.loc["vaes_avx512", "alu_vs_core"])
    assert math.isnan(bud.loc["vaes_avx512", "others_at_limit"])  # no free parts
    assert math.isnan(bud.loc["vaes_avx512", "free_vs_core"])
    assert math.isnan(at.loop_budget(rep, limit=1.5).set_index("backend")
                      .loc["vaes_avx2", "others_at_limit"])  # never crosses
    lines = tg.replay_conclusions(at.loop_budget(rep))
    assert "1.25x" in lines[0] and "room for about 75" in lines[0]
    assert "1.21x with only its computing" in lines[0] and "1.02x with only its loads" in lines[0]
    assert "1.26x with only the chains through its computing instructions cut, 1.24x" in lines[0]
    assert "chains" not in lines[1]
    assert "room" not in lines[1]
    assert at.loop_replay(pd.DataFrame({"part": ["seal"]})).empty
