"""Taint analysis over the optimised IR of a module: which values depend on secrets, and where
a secret decides control flow, a memory address, a division or a call.

The analysis is a module-wide fixpoint.  SSA values carry a set of secret labels and the memory
regions they may point into (vgkernels.ct.policy); memory is tracked per region and 16-byte
slot, flow-insensitively (a slot's labels are everything ever stored there, plus what it held
at entry); a call to a function defined in the module passes its arguments' labels and regions
on to the callee's parameters, so the internal functions are analysed under every caller.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from . import policy
from .irparse import Function, Instr, parse_module, type_bytes

Labels = frozenset[str]
NONE: Labels = frozenset()

# Calls that are constant time whatever their operands (the AES and carry-less multiply
# instructions, byte shuffles, rotates, lifetime markers) ...
CT_INTRINSICS = re.compile(
    r"^llvm\.(x86\.aesni\.|x86\.pclmulqdq|x86\.vpclmulqdq|x86\.ssse3\.pshuf\.b|x86\.avx2\.pshuf\.b"
    r"|x86\.avx512\.pshuf\.b|bswap\.|fshl\.|fshr\.|ctpop\.|lifetime\.|assume|vector\.reduce\."
    r"(or|xor|and|add)\.|stacksave)")
# ... and those whose listed operand positions must be public (lengths, masks, destinations).
PUBLIC_OPERANDS = {r"^llvm\.memset\.": (0, 2), r"^llvm\.mem(cpy|move)\.": (0, 1, 2),
                   r"^llvm\.masked\.load\.": (0, 2), r"^llvm\.masked\.store\.": (1, 3),
                   r"^llvm\.stackrestore": (0,)}
# An inline asm whose template is empty emits no instruction (the bulk functions' frame
# alignment keeps an object alive with one, `kernels.frames`); any other asm is a call.
EMPTY_ASM = re.compile(r'\bcall\b.*\basm\s+(sideeffect\s+)?(alignstack\s+)?""')
# Lowered to a compare and a conditional move: warned like select.
SELECT_LIKE = re.compile(r"^llvm\.(umin|umax|smin|smax|abs)\.")
DIVISIONS = {"udiv", "sdiv", "urem", "srem"}


@dataclass(frozen=True)
class Loc:
    region: str
    offset: int | None


@dataclass
class Val:
    labels: Labels = NONE
    locs: frozenset[Loc] = frozenset()


@dataclass
class Finding:
    """A place where a secret reaches something observable."""

    kind: str  # branch, switch, address, division, call, select
    severity: str  # error, warning (select: checked in machine code), known (the J0 branch)
    function: str
    block: str
    instruction: str
    labels: Labels
    path: list[str] = field(default_factory=list)

    def describe(self) -> str:
        return (f"[{self.severity}] {self.kind} on {','.join(sorted(self.labels))} in "
                f"{self.function} ({self.block}): {self.instruction}")


@dataclass
class TaintResult:
    functions: dict[str, Function]
    findings: list[Finding]
    declassified: list[Finding]  # the tag verdict: one compare of the whole masked difference
    instructions: int
    memory: dict[str, dict[int | None, Labels]]
    region_kind: dict[str, str]
    params: dict[tuple[str, int, str], Val]
    returns: dict[tuple[str, int], Labels]
    contexts: int = 0

    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == "error"]


class _Analysis:
    def __init__(self, funcs: dict[str, Function], prefix: str,
                 roles: dict[str, list[str]] | None = None):
        self.funcs = funcs
        self.prefix = prefix
        self.extra_roles = roles or {}
        self.vals: dict[tuple[str, int, str], Val] = {}
        # calling contexts: internal functions are analysed once per tuple of regions their
        # pointer parameters get (the J0 hash and the AAD hash must not share an io block)
        self.contexts: dict[tuple[str, tuple], int] = {}
        self.todo: list[tuple[str, int]] = []
        self.cause: dict[tuple, tuple] = {}  # node -> (parent node, "fn: text")
        self.mem: dict[str, dict[int | None, Labels]] = {}
        self.kind: dict[str, str] = {}
        self.params: dict[tuple[str, int, str], Val] = {}
        self.returns: dict[tuple[str, int], Labels] = {}
        self.changed = False
        self.cx = 0
        self.leaks: set[tuple[str, int | None, Labels, str]] = set()
        for fn in funcs.values():
            self._seed(fn)

    # -- state ------------------------------------------------------------------------------
    def _seed(self, fn: Function) -> None:
        roles = self.extra_roles.get(fn.name) or policy.exported_roles(fn.name, self.prefix)
        if roles is None:
            return
        self.todo.append((fn.name, 0))
        for p in fn.params:
            idx = _orig_index(p, fn)
            role = roles[idx] if idx is not None and idx < len(roles) else ""
            if role:
                self.kind.setdefault(role, role)
                self.params[(fn.name, 0, p)] = Val(NONE, frozenset({Loc(role, 0)}))

    def get(self, fn: str, name: str, cx: int = 0) -> Val:
        if name.startswith("@"):
            rid = f"global:{name}"
            self.kind.setdefault(rid, "global")
            return Val(NONE, frozenset({Loc(rid, 0)}))
        v = self.vals.get((fn, cx, name))
        if v is not None:
            return v
        return self.params.get((fn, cx, name), Val())

    def _set(self, table: dict, key, val: Val, parent, why: str) -> None:
        old = table.get(key, Val())
        new = Val(old.labels | val.labels, old.locs | val.locs)
        if new != old:
            table[key] = new
            self.changed = True
            if new.labels != old.labels and parent is not None:
                self.cause[("v",) + key] = (parent, why)

    def put(self, fn: str, name: str, val: Val, parent=None, why: str = "") -> None:
        self._set(self.vals, (fn, self.cx, name), val, parent, why)

    def _slots(self, rid: str, off: int | None, size: int) -> list[int | None]:
        if off is None:
            return [None]
        return list(range(off // policy.SLOT, (off + max(size, 1) - 1) // policy.SLOT + 1))

    def load(self, rid: str, off: int | None, size: int) -> tuple[Labels, tuple | None]:
        kind = self.kind.get(rid, "unknown")
        region = self.mem.get(rid, {})
        out, parent = NONE, None
        slots = self._slots(rid, off, size)
        if slots == [None]:
            slots = [None, *[s for s in region if s is not None]]
        for s in slots:
            labs = policy.initial_labels(kind, s) | region.get(s, NONE) | region.get(None, NONE)
            labs = policy.counter_view(kind, s, labs)
            if labs - out and parent is None:
                parent = ("m", rid, s)
            out |= labs
        return out, parent

    def store(self, rid: str, off: int | None, size: int, labels: Labels, parent, why) -> None:
        if self.kind.get(rid) in policy.DECLARED:
            # the ABI documents what each field of these holds: the policy's labels stand, and
            # a secret written into a public field at a known place is a finding (check())
            if off is not None and labels:
                for s in self._slots(rid, off, size):
                    if not policy.initial_labels(self.kind[rid], s):
                        self.leaks.add((rid, s, labels, why))
            return
        region = self.mem.setdefault(rid, {})
        for s in self._slots(rid, off, size):
            old = region.get(s, NONE)
            if labels - old:
                region[s] = old | labels
                self.changed = True
                self.cause.setdefault(("m", rid, s), (parent, why))

    # -- transfer ---------------------------------------------------------------------------
    def run(self) -> None:
        for _ in range(60):
            self.changed = False
            for name, cx in list(self.todo):
                self.cx = cx
                fn = self.funcs[name]
                for ins in fn.instrs:
                    self.step(fn, ins)
            if not self.changed:
                return
        raise RuntimeError("taint analysis did not converge")

    def step(self, fn: Function, ins: Instr) -> None:
        f = fn.name
        ops = [self.get(f, o, self.cx) for o in ins.operands]
        why = f"{f}: {ins.text}"
        first = next(((f, self.cx, o) for o, v in zip(ins.operands, ops, strict=True)
                      if v.labels), None)
        parent = ("v",) + first if first else None
        if ins.opcode == "alloca":
            rid = f"alloca:{f}:{ins.result}" + (f"#{self.cx}" if self.cx else "")
            self.kind[rid] = "alloca"
            self.put(f, ins.result, Val(NONE, frozenset({Loc(rid, 0)})))
        elif ins.opcode == "getelementptr":
            base = ops[0] if ops else Val()
            delta = _gep_offset(ins)
            locs = frozenset(Loc(lc.region, None if delta is None or lc.offset is None
                                 else lc.offset + delta) for lc in base.locs)
            labs = NONE.union(*(o.labels for o in ops))
            self.put(f, ins.result, Val(labs, locs), parent, why)
        elif ins.opcode == "load":
            p = ops[-1]
            size = type_bytes(ins.type_of())
            labs, par = p.labels, parent
            locs: set[Loc] = set()
            for lc in p.locs or {Loc("unknown", None)}:
                self.kind.setdefault(lc.region, "unknown")
                got, gp = self.load(lc.region, lc.offset, size)
                if got - labs and gp is not None:
                    par = gp
                labs |= got
                if ins.type_of() == "ptr":  # a pointer read from memory: where does it point?
                    locs.add(Loc("piece-data" if self.kind[lc.region] == "pieces" else
                                 "unknown", None))
            for r in ("piece-data", "unknown"):
                self.kind.setdefault(r, r)
            self.put(f, ins.result, Val(labs, frozenset(locs)), par, why)
        elif ins.opcode == "store":
            p = ops[-1]
            v = ops[0] if len(ops) == 2 else Val()
            vnode = ("v", f, self.cx, ins.operands[0]) if len(ops) == 2 and v.labels else None
            size = type_bytes(ins.type_of())
            for lc in p.locs or {Loc("unknown", None)}:
                self.kind.setdefault(lc.region, "unknown")
                self.store(lc.region, lc.offset, size, v.labels | p.labels, vnode, why)
        elif ins.opcode == "call":
            self.call(fn, ins, ops, parent, why)
        elif ins.opcode == "ret":
            if ops:
                old = self.returns.get((f, self.cx), NONE)
                if ops[0].labels - old:
                    self.returns[(f, self.cx)] = old | ops[0].labels
                    self.changed = True
        elif ins.result is not None:
            labs = NONE.union(*(o.labels for o in ops))
            locs = frozenset().union(*(o.locs for o in ops)) if ins.opcode in (
                "phi", "select", "bitcast", "ptrtoint", "inttoptr", "add", "sub", "or",
                "and") else frozenset()
            if ins.opcode == "phi":
                locs = _widen(locs)
            if _is_verdict(ins, labs):
                labs = NONE  # the tag check's result is public by design
            self.put(f, ins.result, Val(labs, locs), parent, why)

    def call(self, fn: Function, ins: Instr, ops: list[Val], parent, why: str) -> None:
        callee = self.funcs.get(ins.callee or "")
        if callee is not None:
            key = (callee.name, tuple(sorted(lc.region for lc in v.locs) for v in ops).__repr__())
            cx = self.contexts.get(key)
            if cx is None:
                cx = self.contexts[key] = len(self.contexts) + 1
                self.todo.append((callee.name, cx))
                self.changed = True
            for p, v, o in zip(callee.params, ops, ins.operands, strict=False):
                self._set(self.params, (callee.name, cx, p), v,
                          ("v", fn.name, self.cx, o) if v.labels else None, why)
            if ins.result:
                if "ptr" in callee.param_types:
                    labs = self.returns.get((callee.name, cx), NONE)
                else:
                    # a pure function of its arguments (it can read only constant globals):
                    # its result depends on this call's arguments, not on every caller's
                    labs = NONE.union(*(o.labels for o in ops))
                self.put(fn.name, ins.result, Val(labs), parent, why)
            return
        if ins.result:
            labs = NONE.union(*(o.labels for o in ops))
            if ins.callee and ins.callee.startswith("llvm.masked.load"):
                for lc in ops[0].locs or {Loc("unknown", None)}:
                    labs |= self.load(lc.region, lc.offset, 64)[0]
            self.put(fn.name, ins.result, Val(labs), parent, why)
        if ins.callee and ins.callee.startswith(("llvm.memset", "llvm.memcpy", "llvm.memmove",
                                                 "llvm.masked.store")):
            copies = ins.callee.startswith(("llvm.memcpy", "llvm.memmove"))
            dst = ops[1] if ins.callee.startswith("llvm.masked.store") else ops[0]
            src = ops[0] if ins.callee.startswith("llvm.masked.store") else (
                ops[1] if copies else Val())
            labs = src.labels
            if copies:
                for lc in src.locs:
                    labs |= self.load(lc.region, None, 0)[0]
            for lc in dst.locs or {Loc("unknown", None)}:
                self.store(lc.region, None if not ins.callee.startswith("llvm.masked") else
                           lc.offset, 64, labs, None, why)

    # -- checks -----------------------------------------------------------------------------
    def check(self) -> tuple[list[Finding], list[Finding]]:
        out: list[Finding] = []
        declass: list[Finding] = []
        for rid, slot, labs, why in sorted(self.leaks, key=str):
            fn, _, text = why.partition(": ")
            out.append(Finding("store", "error", fn, f"{rid} slot {slot}", text, labs))
        seen: dict[tuple[str, str, str], Finding] = {}
        for f, cx in self.todo:
            fn = self.funcs[f]
            for ins in fn.instrs:
                ops = [self.get(f, o, cx) for o in ins.operands]

                def add(kind, labs, severity="error", ins=ins, f=f, ops=ops, cx=cx):
                    node = next((("v", f, cx, o) for o, v in zip(ins.operands, ops, strict=True)
                                 if v.labels & labs), None)
                    old = seen.get((f, ins.text, kind))
                    if old is not None:  # the same instruction under another calling context
                        old.labels = old.labels | labs
                        if old.severity == "known" and old.labels != {"J0"}:
                            old.severity = "error"
                        return
                    if severity == "error" and labs == {"J0"} and kind in ("branch", "switch"):
                        severity = "known"
                    seen[(f, ins.text, kind)] = fd = Finding(kind, severity, f, ins.block,
                                                             ins.text, labs, self.path(node))
                    out.append(fd)
                op = ins.opcode
                if op in ("br", "switch") and ops and ops[0].labels:
                    add("branch" if op == "br" else "switch", ops[0].labels)
                elif op in ("load", "store") and ops and ops[-1].labels:
                    add("address", ops[-1].labels)
                elif op in DIVISIONS and any(o.labels for o in ops):
                    add("division", NONE.union(*(o.labels for o in ops)))
                elif op == "select" and ops and ops[0].labels:
                    add("select", ops[0].labels, "warning")
                elif op == "call" and ins.callee not in self.funcs:
                    self._check_call(ins, ops, add)
                if op == "icmp" and _is_verdict(ins, NONE.union(*(o.labels for o in ops))) and \
                        not any(d.function == f and d.instruction == ins.text for d in declass):
                    declass.append(Finding("verdict", "declassified", f, ins.block, ins.text,
                                           NONE.union(*(o.labels for o in ops))))
        return out, declass

    def _check_call(self, ins: Instr, ops: list[Val], add) -> None:
        if ins.callee is None and EMPTY_ASM.search(ins.text):
            return
        name = ins.callee or "<indirect>"
        if SELECT_LIKE.match(name):
            labs = NONE.union(*(o.labels for o in ops))
            if labs:
                add("select", labs, "warning")
            return
        for pat, positions in PUBLIC_OPERANDS.items():
            if re.match(pat, name):
                labs = NONE.union(*(ops[i].labels for i in positions if i < len(ops)))
                if labs:
                    add("call", labs)
                return
        if not CT_INTRINSICS.match(name):
            add("call", NONE.union(*(o.labels for o in ops)) or frozenset({"unknown-callee"}))

    def path(self, node, limit: int = 14) -> list[str]:
        """The taint path back from ``node``: one "function: instruction" per step, ending at a
        parameter, a load from secret memory, or a call's result."""
        steps: list[str] = []
        seen = set()
        while node is not None and node not in seen and len(steps) < limit:
            seen.add(node)
            if node[0] == "m" and ("m",) + node[1:] not in self.cause:
                init = policy.initial_labels(self.kind.get(node[1], ""), node[2])
                steps.append(f"memory {node[1]} slot {node[2]} (secret at entry: "
                             f"{','.join(sorted(init)) or '-'})")
                break
            parent, why = self.cause.get(node, (None, None))
            if why is None:
                if node[0] == "v":
                    steps.append(f"{node[1]}: parameter {node[3]}")
                break
            steps.append(why if node[0] == "v" else f"memory {node[1]} slot {node[2]} <- {why}")
            node = parent
        return steps


# A pointer carried round a loop and advanced by a constant (vg.short.enc.chunks' in and out)
# would take a new offset every round: past this many offsets into one region, a phi's
# pointer is at an unknown offset there, so the fixpoint ends.
MAX_OFFSETS = 8


def _widen(locs: frozenset[Loc]) -> frozenset[Loc]:
    by_region: dict[str, set[int | None]] = {}
    for lc in locs:
        by_region.setdefault(lc.region, set()).add(lc.offset)
    if all(len(offs) <= MAX_OFFSETS for offs in by_region.values()):
        return locs
    return frozenset(Loc(r, None) if len(offs) > MAX_OFFSETS else Loc(r, o)
                     for r, offs in by_region.items() for o in offs)


def _orig_index(param: str, fn: Function) -> int | None:
    """llvmlite names parameters .1, .2, ...; dead-argument elimination keeps the names."""
    m = re.fullmatch(r"%\.(\d+)", param)
    return int(m.group(1)) - 1 if m else fn.params.index(param)


def _gep_offset(ins: Instr) -> int | None:
    m = re.search(r"getelementptr\s+(?:inbounds\s+|nuw\s+|nusw\s+)*(.+?),\s*ptr\s+\S+,\s*(.*)$",
                  ins.text)
    if not m:
        return None
    elem, rest = m.group(1), m.group(2).split(", !")[0]
    idx = re.findall(r"i\d+\s+(-?\d+|%\S+)", rest)
    if len(idx) != 1 or idx[0].startswith("%"):
        return None if any(i.startswith("%") for i in idx) else (
            int(idx[0]) * type_bytes(elem) if len(idx) == 1 else None)
    return int(idx[0]) * type_bytes(elem)


def _is_verdict(ins: Instr, labels: Labels) -> bool:
    """The one declassification: the tag check's one compare of all 128 bits, ``icmp eq/ne
    i128 diff, 0`` over the masked difference of a truncated tag or ``icmp eq/ne i128
    computed, given`` for a whole one (its result, accept or reject, is public)."""
    return (ins.opcode == "icmp" and ins.icmp_pred in ("eq", "ne") and "tag" in labels
            and re.search(r"icmp (?:samesign )?(?:eq|ne) i128 \S+, (?:0|%\S+)$", ins.text)
            is not None)


def analyse(ir_text: str, prefix: str, roles: dict[str, list[str]] | None = None
            ) -> TaintResult:
    """Taint analysis of an optimised module whose exported symbols are ``<prefix>_<op>``;
    ``roles`` gives the region kind per parameter of further entry points (the controls)."""
    funcs = parse_module(ir_text)
    a = _Analysis(funcs, prefix, roles)
    a.run()
    findings, declass = a.check()
    n = sum(len(fn.instrs) for fn in funcs.values())
    return TaintResult(funcs, findings, declass, n, a.mem, a.kind, a.params, a.returns,
                       len(a.todo))


__all__ = ["CT_INTRINSICS", "Finding", "Loc", "TaintResult", "Val", "analyse"]
