"""Assembly text (AT&T, as LLVM prints it) -> functions -> basic blocks -> control-flow graph.

LLVM prints no loop comments here (llvmlite's target machines are not verbose), so the loops
are found from the graph itself: blocks end at a label or a branch, a conditional branch
also falls through, and a loop is the natural loop of a back edge.
"""

from __future__ import annotations

import heapq
import re
from dataclasses import dataclass, field

_FUNC = re.compile(r"^\s*\.type\s+([^,\s]+),@function")
_LABEL = re.compile(r"^([.\w$@]+):")
_BRANCH = re.compile(r"^\s*(j[a-z]+)\s+(\*?[^\s#]+)")


@dataclass
class Block:
    label: str
    instructions: list[str] = field(default_factory=list)
    succs: list[str] = field(default_factory=list)

    @property
    def size(self) -> int:
        return len(self.instructions)


@dataclass
class Function:
    name: str
    blocks: dict[str, Block]  # in layout order
    order: list[str]

    def block_index(self, label: str) -> int:
        return self.order.index(label)


def _is_instruction(line: str) -> bool:
    s = line.strip()
    return bool(s) and not s.startswith((".", "#")) and not _LABEL.match(s)


def _strip_comment(line: str) -> str:
    return line.split("#", 1)[0].rstrip()


def functions(asm: str) -> dict[str, Function]:
    """Every function of an assembly listing with its blocks and their successors."""
    out: dict[str, Function] = {}
    lines = asm.splitlines()
    i = 0
    while i < len(lines):
        m = _FUNC.match(lines[i])
        i += 1
        if not m:
            continue
        name = m.group(1)
        while i < len(lines) and not lines[i].startswith(f"{name}:"):
            i += 1
        i += 1
        body: list[str] = []
        while i < len(lines) and not re.match(r"^\.Lfunc_end\d+:", lines[i]):
            body.append(lines[i])
            i += 1
        out[name] = _blocks(name, body)
    return out


def _blocks(name: str, body: list[str]) -> Function:
    chunks: list[tuple[str, list[str]]] = [(name, [])]
    closed = False  # the last instruction ended a block (branch, ret)
    for raw in body:
        lab = _LABEL.match(raw)
        if lab and lab.group(1).startswith(".LBB"):
            if not chunks[-1][1] and chunks[-1][0] != name:
                chunks[-1] = (lab.group(1), [])  # a label right after a branch
            else:
                chunks.append((lab.group(1), []))
            closed = False
            continue
        if not _is_instruction(raw):
            continue
        if closed:
            chunks.append((f"{name}.{len(chunks)}", []))
            closed = False
        ins = _strip_comment(raw).strip()
        chunks[-1][1].append(ins)
        closed = bool(_BRANCH.match(ins)) or ins.startswith(("ret", "ud2"))
    blocks: dict[str, Block] = {}
    order = [lb for lb, _ in chunks]
    for k, (label, ins) in enumerate(chunks):
        nxt = order[k + 1] if k + 1 < len(order) else None
        last = ins[-1] if ins else ""
        br = _BRANCH.match(last)
        succs: list[str] = []
        if br:
            op, target = br.groups()
            if not target.startswith("*"):  # an indirect jump (table): successors unknown
                succs.append(target)
            if op != "jmp" and nxt:
                succs.append(nxt)
        elif not last.startswith(("ret", "ud2")) and nxt:
            succs.append(nxt)
        blocks[label] = Block(label, ins, succs)
    return Function(name, blocks, order)


@dataclass
class Loop:
    """A natural loop: its header and every block in it (layout order)."""

    function: str
    header: str
    blocks: list[str]


def loops(fn: Function) -> list[Loop]:
    """The natural loops of a function (back edges found by depth-first search from the
    entry; loops sharing a header merged), outermost first in layout order."""
    seen: set[str] = set()
    on_stack: set[str] = set()
    back: list[tuple[str, str]] = []
    # iterative DFS: recursion would overflow on the portable backend's long functions
    stack: list[tuple[str, int]] = [(fn.order[0], 0)]
    seen.add(fn.order[0])
    on_stack.add(fn.order[0])
    while stack:
        node, k = stack[-1]
        succs = [s for s in fn.blocks[node].succs if s in fn.blocks]
        if k < len(succs):
            stack[-1] = (node, k + 1)
            s = succs[k]
            if s in on_stack:
                back.append((node, s))
            elif s not in seen:
                seen.add(s)
                on_stack.add(s)
                stack.append((s, 0))
        else:
            on_stack.discard(node)
            stack.pop()
    preds: dict[str, list[str]] = {lb: [] for lb in fn.order}
    for lb, b in fn.blocks.items():
        for s in b.succs:
            if s in preds:
                preds[s].append(lb)
    members: dict[str, set[str]] = {}
    for tail, head in back:
        body = members.setdefault(head, {head})
        work = [tail]
        while work:
            n = work.pop()
            if n not in body:
                body.add(n)
                work.extend(preds[n])
    out = [Loop(fn.name, h, sorted(m, key=fn.block_index)) for h, m in members.items()]
    return sorted(out, key=lambda lp: fn.block_index(lp.blocks[0]))


def hot_path(fn: Function, loop: Loop) -> list[str]:
    """The cheapest way round a loop (fewest instructions) through its largest block: the
    steady state when the rare branches (e.g. the counter's low byte carrying, once in
    256/G groups) are not taken.  Returned as blocks in execution order from that block."""
    inside = set(loop.blocks)
    start = max(loop.blocks, key=lambda lb: fn.blocks[lb].size)
    # Dijkstra from start's successors back to start, weights = block sizes
    dist: dict[str, int] = {}
    prev: dict[str, str] = {}
    heap: list[tuple[int, str, str]] = []
    for s in fn.blocks[start].succs:
        if s in inside:
            heapq.heappush(heap, (fn.blocks[start].size, s, start))
    while heap:
        d, n, p = heapq.heappop(heap)
        if n in dist:
            continue
        dist[n], prev[n] = d, p
        if n == start:
            break
        for s in fn.blocks[n].succs:
            if s in inside and s not in dist:
                heapq.heappush(heap, (d + fn.blocks[n].size, s, n))
    if start not in dist:
        raise ValueError(f"{fn.name}: no way round the loop at {loop.header}")
    path = [start]
    n = prev[start]
    while n != start:
        path.append(n)
        n = prev[n]
    return [start, *reversed(path[1:])]
