"""Textual LLVM IR -> functions, blocks and instructions, enough for a taint analysis.

llvmlite's binding can walk values, but it does not say which operand of a GEP is an index or
which name in a phi is a block, and it is slow over 25 000 instructions; the optimised IR text
is regular (one instruction per line, except switch tables), so it is read here instead.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_NAME = r'%(?:"[^"]*"|[-\w.$]+)'
_DEFINE = re.compile(r'^define\b.*?@("[^"]+"|[-\w.$]+)\((.*)\)[^(]*\{\s*$')
_PARAM_NAME = re.compile(r"(" + _NAME + r")\s*$")
_LABEL = re.compile(r'^("[^"]+"|[-\w.$]+):')
_RESULT = re.compile(r"^\s*(" + _NAME + r")\s*=\s*(.*)$")
_TOKEN = re.compile(r"label\s+" + _NAME + r"|" + _NAME + r"|@(?:\"[^\"]+\"|[-\w.$]+)")
_CALLEE = re.compile(r'\bcall\b.*?@("[^"]+"|[-\w.$]+)\(')
_TYPE = re.compile(r"^(<\s*\d+\s+x\s+[^>]+>|i\d+|ptr|float|double|void|\[[^\]]+\])")


@dataclass
class Instr:
    """One instruction: its result name (or None), opcode, operand names in order (SSA names
    and @globals, block labels removed) and its text for reports."""

    result: str | None
    opcode: str
    operands: list[str]
    text: str
    block: str
    callee: str | None = None
    icmp_pred: str | None = None

    def type_of(self) -> str:
        """The first type in the instruction after its opcode (load: the loaded type)."""
        rest = self.text.split("=", 1)[1] if self.result else self.text
        words = rest.split()
        i = 1
        while i < len(words) and words[i] in ("volatile", "atomic", "nuw", "nsw", "inbounds",
                                               "exact", "disjoint", "nneg", "samesign", "tail",
                                               "fastcc", "preserve_nonecc", "eq", "ne", "ugt",
                                               "uge", "ult", "ule", "sgt", "sge", "slt", "sle"):
            i += 1
        m = _TYPE.match(" ".join(words[i:]))
        return m.group(1) if m else "?"


@dataclass
class Function:
    name: str
    params: list[str]  # SSA names of the remaining parameters, in order
    param_types: list[str]
    ret_type: str
    internal: bool
    instrs: list[Instr] = field(default_factory=list)


def type_bytes(t: str) -> int:
    """Size in bytes of an IR type (vectors and integers; pointers 8; else 16)."""
    m = re.match(r"<\s*(\d+)\s+x\s+i(\d+)\s*>", t)
    if m:
        return int(m.group(1)) * int(m.group(2)) // 8
    m = re.match(r"i(\d+)$", t)
    if m:
        return max(1, int(m.group(1)) // 8)
    return 8 if t == "ptr" else 16


def split_top_level(s: str) -> list[str]:
    """Split at commas outside any bracket: IR parameter lists, asm operand lists."""
    out, depth, cur = [], 0, ""
    for ch in s:
        if ch in "(<[{":
            depth += 1
        elif ch in ")>]}":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        out.append(cur.strip())
    return out


def _operands(body: str) -> list[str]:
    """SSA names and globals of an instruction body, without block labels and metadata."""
    body = body.split(", !")[0]
    return [t for t in _TOKEN.findall(body) if not t.startswith("label")]


def _call_args(rest: str) -> list[str]:
    """One operand per argument of a call (``rest``: the text after its opening parenthesis),
    "" for a constant: the callee's parameters are matched by position, so a constant argument
    must keep its place (dropping it shifted every later argument onto the wrong parameter)."""
    depth, end = 0, len(rest)
    for k, ch in enumerate(rest):
        if ch in "(<[{":
            depth += 1
        elif ch in ")>]}":
            if depth == 0:
                end = k
                break
            depth -= 1
    out = []
    for arg in split_top_level(rest[:end]):
        toks = [t for t in _TOKEN.findall(arg) if not t.startswith("label")]
        out.append(toks[-1] if toks else "")
    return out


def parse_module(text: str) -> dict[str, Function]:
    """Every defined function of an IR module, in order."""
    funcs: dict[str, Function] = {}
    lines = text.splitlines()
    k = 0
    while k < len(lines):
        line = lines[k]
        m = _DEFINE.match(line)
        k += 1
        if not m:
            continue
        name = m.group(1).strip('"')
        params_src = split_top_level(m.group(2))
        params, ptypes = [], []
        for p in params_src:
            pm = _PARAM_NAME.search(p)
            params.append(pm.group(1) if pm else "")
            ptypes.append(p.split()[0] if p else "?")
        head = line[: line.index("@")]
        ret = head.split()[-1]
        fn = Function(name, params, ptypes, ret, " internal " in f" {head} ")
        block = "entry"
        pending = ""
        while k < len(lines) and not lines[k].startswith("}"):
            raw = lines[k].split(";", 1)[0].rstrip() if ";" in lines[k] else lines[k].rstrip()
            k += 1
            if not raw.strip():
                continue
            lm = _LABEL.match(raw)
            if lm and not raw.startswith(" "):
                block = lm.group(1).strip('"')
                continue
            if pending:  # a switch's case table spans lines up to "]"
                pending += " " + raw.strip()
                if raw.strip() == "]":
                    fn.instrs.append(_instr(pending, block))
                    pending = ""
                continue
            if raw.strip().startswith("switch") and not raw.rstrip().endswith("]"):
                pending = raw.strip()
                continue
            fn.instrs.append(_instr(raw.strip(), block))
        k += 1
        funcs[name] = fn
    return funcs


def _instr(text: str, block: str) -> Instr:
    rm = _RESULT.match(text)
    result, body = (rm.group(1), rm.group(2)) if rm else (None, text)
    words = body.split()
    op = words[0]
    if op in ("tail", "musttail", "notail"):
        op = words[1]
    pred = words[1] if op in ("icmp", "fcmp") else None
    if pred == "samesign":
        pred = words[2]
    callee = None
    ops = _operands(body)
    if op == "call":
        cm = _CALLEE.search(body)
        callee = cm.group(1).strip('"') if cm else None
        ops = _call_args(body[cm.end():]) if cm else ops
    elif op == "phi":
        ops = re.findall(r"\[\s*(" + _NAME + r")\s*,", body)
    return Instr(result, op, ops, text, block, callee, pred)


__all__ = ["Function", "Instr", "parse_module", "type_bytes"]
