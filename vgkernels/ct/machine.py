"""Machine-code check of an object file: every conditional jump, conditional move and indexed
memory access per function, traced back inside its basic block to where its operands came
from.

Disassembly is GNU objdump's (binutils) or llvm-objdump's AT&T text, so the check runs on
exported objects for any CPU (``vaes_avx512`` on a host without AVX-512).  The trace is a
backward slice over the block: from the flags a jump reads (the last flag-writing instruction)
or the registers an address uses, through moves and arithmetic, to an origin:

- ``vector``: a value taken out of a vector or mask register (vmovd/vmovq/vpextr*/kmov/
  vmovmsk*) or flags set by a vector test (ptest/vptest/ktest/kortest).  In these kernels every
  vector register may hold key- or data-derived bytes, so such a jump or address is a candidate
  leak; it must be explained by the IR findings of the same function (the J0 branch, the tag
  verdict, a select warned about) or it is an error.
- ``memory``: a scalar load; a byte or word load (movzb/movzw/movsb) through a register feeding a
  branch or an address is a data-dependent decision and a candidate too.
- ``block entry`` / ``constant``: a value from outside the block (loop counters, lengths,
  pointers: public in every function the IR analysis passed) or an immediate.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from .irparse import split_top_level

_FUNC = re.compile(r"^[0-9a-f]+ <(.+)>:$")
_INSN = re.compile(r"^\s*([0-9a-f]+):\s+(?:\{\w+\}\s+)?([a-z][a-z0-9.]*)\s*(.*?)\s*(?:#.*)?$")
_PREFIXES = ("cs", "ds", "data16")  # printed as the mnemonic before the real one
_REG = re.compile(r"%([a-z][a-z0-9]*)")
_GPR = {}
for _i, _n in enumerate(("a", "b", "c", "d")):
    for _f in (f"r{_n}x", f"e{_n}x", f"{_n}x", f"{_n}l", f"{_n}h"):
        _GPR[_f] = f"r{_n}x"
for _n in ("si", "di", "bp", "sp"):
    for _f in (f"r{_n}", f"e{_n}", _n, f"{_n}l"):
        _GPR[_f] = f"r{_n}"
for _k in range(8, 16):
    for _f in (f"r{_k}", f"r{_k}d", f"r{_k}w", f"r{_k}b"):
        _GPR[_f] = f"r{_k}"

VEC_TO_GPR = ("vmovd", "vmovq", "movd", "movq", "vpextr", "pextr", "kmov", "vmovmsk", "movmsk",
              "pmovmsk", "vpmovmsk")
VEC_FLAGS = ("ptest", "vptest", "ktest", "kortest", "ucomis", "comis", "vucomis", "vcomis")
NO_FLAGS = ("mov", "lea", "cmov", "set", "push", "pop", "shlx", "shrx", "sarx", "rorx", "nop",
            "bswap", "xchg", "kmov", "vmov", "vp", "vb", "vi", "vx", "vae", "vpc", "pshuf",
            "pclmul", "aes", "pxor", "pand", "por", "movdq", "movap", "movup", "punpck", "pinsr",
            "pextr", "pcmpeq", "pcmpgt", "pblend", "palign", "xorps", "andps", "orps", "shufps",
            "insertps", "vzeroupper", "cltq", "cqto", "cltd", "movabs", "vshuf", "vinsert",
            "vextract", "vperm", "vbroadcast", "vpbroadcast", "ret", "call", "jmp", "ud2", "int3",
            "endbr", "pack", "padd", "psub", "pmul", "pmadd", "psra", "psll", "psrl", "pmovzx",
            "pmovsx", "pmax", "pmin", "pavg", "psadbw")  # SSE integer ops: EFLAGS untouched
# begin like a NO_FLAGS prefix ("pop", "vp", "pcmp") but write EFLAGS
FLAGS_DESPITE_PREFIX = ("popcnt", "popf", "pcmpestr", "pcmpistr", "vpcmpestr", "vpcmpistr")


@dataclass
class Insn:
    addr: int
    mnemonic: str
    operands: list[str]

    @property
    def text(self) -> str:
        return f"{self.mnemonic} {','.join(self.operands)}".strip()


@dataclass
class MachineFinding:
    kind: str  # jump, cmov, address
    function: str
    address: int
    instruction: str
    origin: str  # vector, byte load
    trace: list[str]
    explained_by: str | None = None  # the IR finding it corresponds to, when there is one


@dataclass
class MachineFunction:
    name: str
    insns: list[Insn] = field(default_factory=list)
    cond_jumps: int = 0
    cmovs: int = 0
    indexed: int = 0
    findings: list[MachineFinding] = field(default_factory=list)


def objdump_tool() -> list[str]:
    """The disassembler: GNU objdump (binutils) or llvm-objdump, AT&T syntax."""
    for tool in ("objdump", "llvm-objdump"):
        if shutil.which(tool):
            return [tool, "-d", "--no-show-raw-insn"]
    raise RuntimeError("no disassembler: install binutils (apt-get install binutils)")


def disassemble(obj: bytes) -> str:
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "k.o"
        p.write_bytes(obj)
        return subprocess.run([*objdump_tool(), str(p)], check=True, capture_output=True,
                              text=True).stdout


def parse(text: str) -> dict[str, MachineFunction]:
    funcs: dict[str, MachineFunction] = {}
    cur: MachineFunction | None = None
    for line in text.splitlines():
        m = _FUNC.match(line)
        if m:
            cur = funcs.setdefault(m.group(1), MachineFunction(m.group(1)))
            continue
        if cur is None:
            continue
        m = _INSN.match(line)
        if m:
            mn, ops = m.group(2), m.group(3)
            while mn in _PREFIXES and ops:  # "cs nopw 0x0(%rax,%rax,1)": padding, not an access
                mn, _, ops = ops.partition(" ")
            ops = re.sub(r"\s*<[^>]*>", "", ops)
            cur.insns.append(Insn(int(m.group(1), 16), mn, split_top_level(ops)))
    return funcs


def _canon(reg: str) -> str:
    if reg in _GPR:
        return _GPR[reg]
    m = re.fullmatch(r"[xyz]mm(\d+)", reg)
    return f"v{m.group(1)}" if m else reg


def _regs(op: str) -> set[str]:
    return {_canon(r) for r in _REG.findall(op)} - {"rip"}


def _is_mem(op: str) -> bool:
    return "(" in op and not op.startswith("*")


def _writes_flags(mn: str) -> bool:
    if mn.startswith(VEC_FLAGS + FLAGS_DESPITE_PREFIX):
        return True
    return not mn.startswith(NO_FLAGS) and not mn.startswith("j")


def _dest(ins: Insn) -> set[str]:
    if not ins.operands or ins.mnemonic.startswith(("cmp", "test", "bt", "push", "j", "call")):
        return set()
    d = ins.operands[-1]
    d = re.sub(r"\{[^}]*\}", "", d)
    return set() if _is_mem(d) else _regs(d)


def _origin(block: list[Insn], end: int, regs: set[str], trace: list[str]) -> str | None:
    """Walk back from block[end] (exclusive) for ``regs``; the first data-dependent origin."""
    want = set(regs) - {"rsp", "rbp", "rip"}
    for k in range(end - 1, -1, -1):
        if not want:
            return None
        ins = block[k]
        dst = _dest(ins)
        hit = dst & want
        if not hit:
            continue
        trace.append(f"{ins.addr:x}: {ins.text}")
        srcs = ins.operands[:-1]
        mn = ins.mnemonic
        if mn.startswith(VEC_TO_GPR) and any(_regs(s) & {f"v{i}" for i in range(32)} or
                                              re.search(r"%k\d", s) for s in srcs):
            return "vector"
        if mn.startswith(("movzb", "movsb", "movzw", "movsw")) and any(_is_mem(s) for s in srcs):
            return "stack byte" if any("%rsp" in s or "%rbp" in s for s in srcs) else "byte load"
        want -= hit
        if mn.startswith(("xor", "sub")) and len(set(ins.operands)) == 1:
            continue  # zeroing idiom
        for s in srcs:
            if not _is_mem(s):
                want |= _regs(s) - {"rsp", "rbp", "rip"}
        if not mn.startswith(("mov", "lea")):
            want |= dst  # two-operand arithmetic reads its destination too
            want -= {r for r in dst if mn.startswith(("mov", "lea"))}
    return None


def _blocks(insns: list[Insn]) -> list[list[Insn]]:
    targets = set()
    for ins in insns:
        if ins.mnemonic.startswith("j") and ins.operands:
            try:
                targets.add(int(ins.operands[0], 16))
            except ValueError:
                pass
    blocks, cur = [], []
    for ins in insns:
        if ins.addr in targets and cur:
            blocks.append(cur)
            cur = []
        cur.append(ins)
        if ins.mnemonic.startswith(("j", "ret", "ud2")):
            blocks.append(cur)
            cur = []
    if cur:
        blocks.append(cur)
    return blocks


def check_function(fn: MachineFunction) -> MachineFunction:
    for block in _blocks(fn.insns):
        for k, ins in enumerate(block):
            mn = ins.mnemonic
            cond_jump = mn.startswith("j") and mn != "jmp"
            cmov = mn.startswith("cmov")
            if cond_jump or cmov:
                if cond_jump:
                    fn.cond_jumps += 1
                else:
                    fn.cmovs += 1
                trace: list[str] = []
                origin = None
                for j in range(k - 1, -1, -1):
                    setter = block[j]
                    if _writes_flags(setter.mnemonic):
                        trace.append(f"{setter.addr:x}: {setter.text}")
                        if setter.mnemonic.startswith(VEC_FLAGS):
                            origin = "vector"
                        else:
                            regs = set().union(*(_regs(o) for o in setter.operands
                                                 if not _is_mem(o)))
                            mem = [o for o in setter.operands if _is_mem(o)]
                            if mem and setter.mnemonic.startswith(("cmpb", "testb")):
                                # a spilled i1 (public per the IR, see explain) or a data byte
                                origin = ("stack byte" if any("%rsp" in o or "%rbp" in o
                                                              for o in mem) else "byte load")
                            else:
                                origin = _origin(block, j, regs, trace)
                        break
                if origin:
                    fn.findings.append(MachineFinding("jump" if cond_jump else "cmov", fn.name,
                                                      ins.addr, ins.text, origin, trace))
            for op in ins.operands:
                if not _is_mem(op) or mn.startswith(("lea", "nop", "data16")):
                    continue
                addr = re.search(r"\(([^)]*)\)", op)
                regs = _regs(addr.group(1)) if addr else set()
                if len(regs) > 1:
                    fn.indexed += 1
                trace = []
                # base and index alike: LLVM puts the table in either
                origin = _origin(block, k, regs, trace)
                if origin:
                    fn.findings.append(MachineFinding("address", fn.name, ins.addr, ins.text,
                                                      origin, trace))
    return fn


def check_object(obj: bytes) -> dict[str, MachineFunction]:
    """Every function of an object file, checked."""
    return {name: check_function(fn) for name, fn in parse(disassemble(obj)).items()}


__all__ = ["MachineFinding", "MachineFunction", "check_function", "check_object", "disassemble",
           "objdump_tool", "parse"]
