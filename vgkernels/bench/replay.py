"""Target 1's hot loop replayed on its own: what the loop's work besides the AES rounds and
the carry-less multiplies costs, and how that cost grows with the amount of it.

The stitched loop long messages run in (`bound.bulk_loop`: the lead loop where there is one,
the loop `bound.kernel_mix` counts) is taken from the backend's assembly for this CPU, its
hot path made a straight line (the branches dropped: the steady state, the counter not
carrying) and run in a loop of its own as inline assembly, in a function of the seal
signature so the driver times it like a kernel (as the bound loops).  The parts (`PARTS`):

- ``loop``: every instruction of the hot path.
- ``core``: its AES rounds and multiplies alone, in the loop's order.
- ``free``: ``core`` plus every other vector instruction, each reading and writing vector
  registers 16-31 of its own, so that nothing chains through them (no dependency, no spill
  reload waiting on its store): what the other work costs by its number and kind alone.
- ``rest1`` .. ``rest3``: as ``free`` with 1/4, 2/4 and 3/4 of the other vector instructions,
  evenly spread: the cost against the amount.
- ``alu``, ``moves``: as ``free`` with only the other instructions of one class (`other_class`):
  the computing ones (XORs, shuffles, adds), or the loads, stores and register moves: which
  kind the loop pays for.
- ``cut_alu``, ``cut_moves``: every instruction of the loop, those of one class on registers
  of their own (as in ``free``), the rest as in the loop: nothing chains through that class,
  everything else chains as in the loop.  ``loop`` against them: which class's chains the
  loop waits for (on Zen 4 the computing ones: the reduction's XORs wait on the last
  multiplies; on Zen 5 ``loop`` and ``free`` run alike).

The free parts need AVX-512VL (registers 16-31) and a loop that leaves them unused:
the 16-register backends on an AVX-512 host.  Elsewhere only ``loop`` and ``core`` are built.

Memory: every memory operand is rewritten to a fixed place in a scratch area of the replay's
own (rip-relative: a 16 KiB window per base register, the stack's and the constants' their
own; displacements modulo 16 KiB, so alignment is kept), so no address depends on the loop's
integer work and a replay touches no memory outside its module.  Loads and stores keep their
kind and width; they hit the same L1 lines every iteration where the kernel streams through
the message.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from llvmlite import ir

from ..asm.regions import AES_LAST, AES_ROUND, CLMUL
from . import bound

PARTS = ("loop", "core", "free", "rest1", "rest2", "rest3", "alu", "moves", "cut_alu",
         "cut_moves")
FREE_PARTS = PARTS[2:]
CUT_PARTS = ("cut_alu", "cut_moves")  # the class after "cut_": its chains cut, all kept
WINDOW = 16384
_CORE = AES_ROUND + AES_LAST + CLMUL
_GPRS = ("rax", "rbx", "rcx", "rdx", "rsi", "rdi", "rbp", "r8", "r9", "r10", "r11", "r12",
         "r13", "r14", "r15")
# VEX names whose EVEX form has another name; every other re-registered mnemonic must be in
# _EVEX_SAME (an instruction without an EVEX form stays where it is, with its own registers)
_EVEX_RENAME = {"vpxor": "vpxord", "vpand": "vpandd", "vpor": "vpord", "vpandn": "vpandnd",
                "vmovdqa": "vmovdqa64", "vmovdqu": "vmovdqu64",
                "vinserti128": "vinserti32x4", "vextracti128": "vextracti32x4"}
_EVEX_SAME = {"vpxord", "vpxorq", "vpandd", "vpandq", "vpord", "vporq", "vpternlogd",
              "vpternlogq", "vmovdqa64", "vmovdqu64", "vmovdqa32", "vmovdqu32", "vmovaps",
              "vmovups", "vpshufb", "vpshufd", "vpunpcklqdq", "vpunpckhqdq", "vpslldq",
              "vpsrldq", "vpsllq", "vpsrlq", "vpaddd", "vpaddq", "vpsubd", "vpalignr",
              "vpbroadcastq", "vpbroadcastd", "vshufi64x2", "vinserti32x4", "vextracti32x4",
              "vpermq", "vpermd", "vmovddup", "vpsrld", "vpslld", "vpsrad", "vpshufhw",
              "vpshuflw", "vmovd", "vmovq", "vpinsrq", "vpextrq"}
_MEM = re.compile(r"(?P<disp>[-\w.$+]*)\((?P<base>%\w+)?(?:,(?P<index>%\w+)(?:,\d)?)?\)")
_VREG = re.compile(r"%([xyz])mm(\d+)")


def _op(ins: str) -> str:
    return ins.split()[0]


def kind(ins: str) -> str:
    """``branch``, ``core`` (AES round, carry-less multiply), ``vector`` or ``scalar``."""
    op = _op(ins)
    if op.startswith("j"):
        return "branch"
    if op in _CORE:
        return "core"
    return "vector" if _VREG.search(ins) or op.startswith("v") else "scalar"


def other_class(ins: str) -> str:
    """An other vector instruction's class: ``moves`` (a load, a store, a register move, a
    broadcast from memory) or ``alu`` (it computes)."""
    op = _op(ins)
    return "moves" if op.startswith("vmov") or ("broadcast" in op and "(" in ins) else "alu"


def hot_loop(backend: str) -> tuple[tuple[str, ...], int]:
    """The hot path of the loop long messages run in (`bound.bulk_loop`), and its bytes per
    iteration."""
    st = bound.bulk_loop(backend)
    return st.instructions, 16 * st.blocks_per_iteration


@dataclass(frozen=True)
class Replay:
    """One part of one backend's replay: its body (inline assembly lines, without the loop
    around it), the bytes an iteration stands for and how many other vector instructions of
    how many it keeps."""

    backend: str
    part: str
    body: tuple[str, ...]
    bytes_per_iter: int
    others: int  # other vector instructions kept
    others_total: int  # ... of the loop's
    in_place: int  # ... of the kept, in a free part: left on their own registers (no EVEX
    # form; in a cut part, of its class)
    windows: int  # scratch windows the memory operands use

    def name(self) -> str:
        return f"vgr_{self.backend}_{self.part}"

    @property
    def core(self) -> int:
        return sum(1 for i in self.body if kind(i) == "core")


class _Memory:
    """Memory operands -> rip-relative places in the scratch symbol ``sym``."""

    def __init__(self, sym: str):
        # window 0: the constants (from 64: the replay's counter is at 0 and 8)
        self.sym, self.windows, self.consts = sym, {"%rsp": 1}, {}

    def place(self, m: re.Match) -> str:
        disp, base = m.group("disp"), m.group("base")
        if base == "%rip":
            k = self.consts.setdefault(disp, len(self.consts))
            off = 64 * (k + 1) % WINDOW
        else:
            w = self.windows.setdefault(base or "", len(self.windows) + 1)
            off = w * WINDOW + int(disp or "0", 0) % WINDOW
        return f"{self.sym}+{off}(%rip)"

    def rewrite(self, ins: str) -> str:
        if _op(ins).startswith("lea"):
            # address arithmetic, no access: only a symbol must not be left unresolved
            return _MEM.sub(lambda m: self.place(m) if m.group("base") == "%rip" else m.group(0),
                            ins)
        return _MEM.sub(self.place, ins)


def _uses(body: list[str], reg: str) -> bool:
    names = {reg, "e" + reg[1:], reg[1:]} if not reg[1].isdigit() else {reg}
    names |= {reg + "d", reg + "w", reg + "b"}
    if reg in ("rax", "rbx", "rcx", "rdx"):
        names |= {reg[1] + "l", reg[1] + "h"}
    if reg in ("rsi", "rdi", "rbp"):
        names.add(reg[1:] + "l")
    return any(re.search(rf"%({'|'.join(names)})\b", i) for i in body)


def _free(ins: str, k: int) -> str | None:
    """``ins`` with its vector registers renamed into 16-31 (destination 16 + k mod 8, sources
    from 24), in its EVEX form; None when it has none."""
    op, args = ins.split(None, 1)
    op = _EVEX_RENAME.get(op, op)
    if op not in _EVEX_SAME:
        return None
    parts = [p.strip() for p in re.split(r",(?![^(]*\))", args.strip())]
    for j, p in enumerate(parts):
        m = _VREG.fullmatch(p)
        if m:
            parts[j] = (f"%{m.group(1)}mm{16 + k % 8}" if j == len(parts) - 1
                        else f"%{m.group(1)}mm{24 + (k + j) % 8}")
    return f"{op} {', '.join(parts)}"


def can_free(instructions: tuple[str, ...]) -> bool:
    """Whether the loop leaves vector registers 16-31 unused (the 16-register backends)."""
    return all(int(m.group(2)) < 16 for i in instructions for m in _VREG.finditer(i))


def replay(backend: str, part: str, instructions: tuple[str, ...] | None = None,
           bytes_per_iter: int | None = None) -> Replay:
    """One part of the backend's replay (see the module's docstring)."""
    if part not in PARTS:
        raise ValueError(f"unknown replay part {part!r} (one of {', '.join(PARTS)})")
    if instructions is None:
        instructions, bytes_per_iter = hot_loop(backend)
    if part in FREE_PARTS and not can_free(instructions):
        raise ValueError(f"{backend}: its loop uses vector registers 16-31; no {part} replay")
    mem = _Memory(f"vgr_{backend}_{part}_scratch")
    others = [i for i in instructions if kind(i) == "vector"]
    quarters = {"free": 4, "rest1": 1, "rest2": 2, "rest3": 3}.get(part, 4)
    body: list[str] = []
    nth = kept = in_place = 0
    for ins in instructions:
        k = kind(ins)
        if k == "branch" or (part == "core" and k != "core"):
            continue
        if part in FREE_PARTS and k == "vector":
            nth += 1
            if (nth * quarters) // 4 == ((nth - 1) * quarters) // 4:
                continue
            cls = other_class(ins)
            if part in ("alu", "moves") and cls != part:
                continue
            if part not in CUT_PARTS or cls == part[4:]:
                renamed = _free(ins, nth)
                in_place += renamed is None
                ins = renamed or ins
        if k == "vector":
            kept += 1
        body.append(mem.rewrite(ins))
    return Replay(backend, part, tuple(body), int(bytes_per_iter or 0), kept, len(others),
                  in_place, len(mem.windows) + 2)  # the constants' and one of slack


def _asm_text(rp: Replay) -> tuple[str, str]:
    """The inline assembly (LLVM syntax: a literal ``$`` doubled) and its counter register:
    the first general register the body leaves alone, else a counter in the scratch."""
    sym = f"{rp.name()}_scratch"
    free = [r for r in _GPRS if not _uses(list(rp.body), r)]
    cnt = f"%{free[0]}" if free else f"{sym}+8(%rip)"
    lines = [f"movq {sym}(%rip), %{free[0]}"] if free else []
    lines += [".p2align 6", "1:", *rp.body, f"decq {cnt}", "jnz 1b"]
    return "\n".join(lines).replace("$", "$$"), cnt


def emit(module: ir.Module, rp: Replay, zmm: bool) -> ir.Function:
    """The replay as a function of the seal signature: ``len`` bytes (whole iterations, at
    least one) through the loop, ``tag`` untouched.  ``zmm``: the module is compiled with
    AVX-512 (clobber registers 16-31 too)."""
    i8, i64 = ir.IntType(8), ir.IntType(64)
    p = ir.PointerType()
    area = ir.ArrayType(i8, rp.windows * WINDOW)
    scratch = ir.GlobalVariable(module, area, name=f"{rp.name()}_scratch")
    scratch.initializer = ir.Constant(area, None)
    scratch.align = 4096
    f = ir.Function(module, ir.FunctionType(ir.IntType(32), [p, p, i64, p, i64, p, i64, p]),
                    name=rp.name())
    f.attributes.add("noinline")
    b = ir.IRBuilder(f.append_basic_block("entry"))
    iters = b.udiv(f.args[6], ir.Constant(i64, max(1, rp.bytes_per_iter)))
    iters = b.select(b.icmp_unsigned("==", iters, ir.Constant(i64, 0)), ir.Constant(i64, 1),
                     iters)
    text, cnt = _asm_text(rp)
    at = b.gep(scratch, [ir.Constant(i64, 0), ir.Constant(i64, 0 if "%" in cnt else 8)])
    b.store(iters, b.bitcast(at, i64.as_pointer()))
    vec = ",".join(f"~{{{'zmm' if zmm else 'xmm'}{k}}}" for k in range(32 if zmm else 16))
    gprs = ",".join(f"~{{{r}}}" for r in _GPRS)
    asm = ir.InlineAsm(ir.FunctionType(ir.VoidType(), []), text,
                       f"{gprs},{vec},~{{memory}},~{{dirflag}},~{{fpsr}},~{{flags}}",
                       side_effect=True)
    b.call(asm, [])
    b.ret(ir.Constant(ir.IntType(32), 0))
    return f


def module_ir(replays: list[Replay], zmm: bool) -> str:
    module = ir.Module(name="vg_bench_replay")
    for rp in replays:
        emit(module, rp, zmm)
    return str(module)


def replays(backend: str, avx512: bool) -> list[Replay]:
    """The parts this host can run for the backend: ``loop`` and ``core``, and the free
    parts where ``avx512`` and the loop leaves registers 16-31 unused."""
    ins, per = hot_loop(backend)
    parts = PARTS if avx512 and can_free(ins) else PARTS[:2]
    return [replay(backend, part, ins, per) for part in parts]


__all__ = ["CUT_PARTS", "FREE_PARTS", "PARTS", "WINDOW", "Replay", "can_free", "emit",
           "hot_loop", "kind", "module_ir", "other_class", "replay", "replays"]
