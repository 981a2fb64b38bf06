"""Types and small IR helpers shared by every generator."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from types import SimpleNamespace
from typing import Any

from llvmlite import ir

i1 = ir.IntType(1)
i8 = ir.IntType(8)
i32 = ir.IntType(32)
i64 = ir.IntType(64)
i128 = ir.IntType(128)
ptr = ir.PointerType()
void = ir.VoidType()


def vec(w: int) -> ir.VectorType:
    """W 16-byte blocks as LLVM sees AES / CLMUL operands: <2W x i64>."""
    return ir.VectorType(i64, 2 * w)


def bvec(w: int) -> ir.VectorType:
    return ir.VectorType(i8, 16 * w)


def dvec(w: int) -> ir.VectorType:
    return ir.VectorType(i32, 4 * w)


def width_of(v: ir.Value) -> int:
    return v.type.count // 2


def c64(x: int) -> ir.Constant:
    return ir.Constant(i64, x)


def csize(x: int) -> ir.Constant:
    return ir.Constant(i64, x)


def zero(w: int) -> ir.Constant:
    return ir.Constant(vec(w), None)


def const_vec(w: int, qwords: Sequence[int]) -> ir.Constant:
    """A <2W x i64> constant from per-lane (lo, hi) qwords repeated over the W lanes."""
    vals = [ir.Constant(i64, q & (2**64 - 1)) for _ in range(w) for q in qwords]
    return ir.Constant(vec(w), vals)


class _VolatileLoad(ir.LoadInstr):
    def descr(self, buf):
        before: list[str] = []
        super().descr(before)
        buf.append(before[0].replace("load ", "load volatile ", 1))


@dataclasses.dataclass(frozen=True)
class Reloaded:
    """A value kept in memory and loaded again at each use (volatile: LLVM neither shares the
    loads nor hoists them), so x86 folds each load into the one instruction that uses it and
    no register holds the value between uses (nor is it spilled)."""

    em: Emitter
    base: ir.Value
    offset: int
    typ: ir.Type

    def load(self) -> ir.Value:
        return self.em.load_volatile(self.base, self.offset, self.typ)


def use(v: ir.Value | Reloaded) -> ir.Value:
    """``v`` itself, or a `Reloaded` value's load for this use."""
    return v.load() if isinstance(v, Reloaded) else v


class Emitter:
    """An IRBuilder plus the helpers every generator needs."""

    def __init__(self, module: ir.Module, builder: ir.IRBuilder):
        self.module = module
        self.b = builder

    # -- intrinsics ------------------------------------------------------------------------
    def intrinsic(self, name: str, ret: ir.Type, args: Sequence[ir.Type]) -> ir.Function:
        fn = self.module.globals.get(name)
        if fn is None:
            fn = ir.Function(self.module, ir.FunctionType(ret, list(args)), name=name)
        return fn

    # -- memory ----------------------------------------------------------------------------
    def gep(self, base: ir.Value, offset: ir.Value | int) -> ir.Value:
        if isinstance(offset, int):
            if offset == 0:
                return base
            offset = csize(offset)
        return self.b.gep(base, [offset], source_etype=i8)

    def load(self, base: ir.Value, offset: ir.Value | int = 0, w: int = 1) -> ir.Value:
        """Unaligned load of W blocks."""
        return self.b.load(self.gep(base, offset), typ=vec(w), align=1)

    def load_invariant(self, base: ir.Value, offset: ir.Value | int = 0, w: int = 1) -> ir.Value:
        """A load of bytes no kernel call changes (a round key in the key context), marked
        !invariant.load: under register pressure LLVM reloads it (or folds it into its user)
        instead of spilling another value."""
        ld = self.load(base, offset, w)
        ld.set_metadata("invariant.load", self.b.module.add_metadata([]))
        return ld

    def store(self, v: ir.Value, base: ir.Value, offset: ir.Value | int = 0) -> None:
        self.b.store(v, self.gep(base, offset), align=1)

    def load_int(self, base: ir.Value, offset: ir.Value | int, typ: ir.IntType) -> ir.Value:
        return self.b.load(self.gep(base, offset), typ=typ, align=1)

    def store_int(self, v: ir.Value, base: ir.Value, offset: ir.Value | int) -> None:
        self.b.store(v, self.gep(base, offset), align=1)

    def memmove(self, dst: ir.Value, src: ir.Value, n: ir.Value) -> None:
        """n bytes from src to dst by libc's memmove (a call: it moves as wide as the CPU
        allows, where an SSE kernel has 16-byte moves); src == dst is allowed."""
        move = self.intrinsic("llvm.memmove.p0.p0.i64", ir.VoidType(), [ptr, ptr, i64, i1])
        self.b.call(move, [dst, src, n, ir.Constant(i1, 0)])

    def load_volatile(self, base: ir.Value, offset: ir.Value | int, typ: ir.Type,
                      align: int = 1) -> ir.Value:
        """A load LLVM neither merges with its neighbours nor shares with an earlier load of
        the same bytes (llvmlite's builder has no volatile flag)."""
        ld = _VolatileLoad(self.b.block, self.gep(base, offset), typ=typ)
        ld.align = align
        self.b._insert(ld)
        return ld

    # -- lanes and bytes -------------------------------------------------------------------
    def xor(self, *vs: ir.Value) -> ir.Value:
        acc = vs[0]
        for v in vs[1:]:
            acc = self.b.xor(acc, v)
        return acc

    def as_bytes(self, v: ir.Value) -> ir.Value:
        return self.b.bitcast(v, bvec(width_of(v)))

    def as_vec(self, v: ir.Value) -> ir.Value:
        return self.b.bitcast(v, vec(v.type.count // 16))

    def shuffle_bytes(self, v: ir.Value, idx: Sequence[int]) -> ir.Value:
        by = self.as_bytes(v)
        mask = ir.Constant(ir.VectorType(i32, len(idx)), [ir.Constant(i32, i) for i in idx])
        return self.as_vec(self.b.shuffle_vector(by, ir.Constant(by.type, None), mask))

    def bswap_lanes(self, v: ir.Value) -> ir.Value:
        """Reverse the 16 bytes of every block: memory order <-> GHASH's reflected integer."""
        w = width_of(v)
        return self.shuffle_bytes(v, [16 * lane + 15 - j for lane in range(w) for j in range(16)])

    def swap_qwords(self, v: ir.Value) -> ir.Value:
        w = width_of(v)
        mask = [q for lane in range(w) for q in (2 * lane + 1, 2 * lane)]
        return self.b.shuffle_vector(v, ir.Constant(v.type, None), _i32vec(mask))

    def unpack_qwords(self, a: ir.Value, b: ir.Value, high: bool) -> ir.Value:
        """Per 128-bit lane: qword ``high`` of a, then the same qword of b
        (vpunpcklqdq / vpunpckhqdq)."""
        w, h = width_of(a), int(high)
        mask = [q for lane in range(w) for q in (2 * lane + h, 2 * w + 2 * lane + h)]
        return self.b.shuffle_vector(a, b, _i32vec(mask))

    def broadcast(self, v: ir.Value, w: int) -> ir.Value:
        """One block repeated over W lanes."""
        if w == width_of(v):
            return v
        return self.b.shuffle_vector(v, ir.Constant(v.type, None), _i32vec([0, 1] * w))

    def widen(self, v: ir.Value, w: int) -> ir.Value:
        """One block in lane 0, zeros in the others."""
        if w == 1:
            return v
        mask = [0, 1] + [2] * (2 * w - 2)
        return self.b.shuffle_vector(v, zero(1), _i32vec(mask))

    def lane(self, v: ir.Value, k: int) -> ir.Value:
        return self.b.shuffle_vector(v, ir.Constant(v.type, None), _i32vec([2 * k, 2 * k + 1]))

    def fold_lanes(self, v: ir.Value) -> ir.Value:
        """XOR of the W blocks of v (a horizontal fold, halving the width each step)."""
        w = width_of(v)
        while w > 1:
            h = w // 2
            lo = self.b.shuffle_vector(v, ir.Constant(v.type, None), _i32vec(range(2 * h)))
            hi = self.b.shuffle_vector(v, ir.Constant(v.type, None), _i32vec(range(2 * h, 4 * h)))
            v, w = self.b.xor(lo, hi), h
        return v

    def to_i128(self, v: ir.Value) -> ir.Value:
        return self.b.bitcast(v, i128)

    def from_i128(self, x: ir.Value) -> ir.Value:
        return self.b.bitcast(x, vec(1))

    # -- control flow ----------------------------------------------------------------------
    @contextmanager
    def loop(self, name: str, cond: Callable[[SimpleNamespace], ir.Value],
             **carried: Carried) -> Iterator[SimpleNamespace]:
        """``while cond(v): <body>`` with the loop-carried values by name, in the spirit of
        numba's ``cgutils.for_range``::

            with em.loop("sum", lambda v: b.icmp_unsigned("<", v.k, n), k=c64(0), tot=t0) as v:
                v.tot = b.add(v.tot, x)       # the body assigns the next values
                v.k = b.add(v.k, c64(1))
            total = v.tot                     # after the block: the values on exit

        A value may be an ir.Value, a list of them or a dataclass of them (GHASH sums); one phi
        per leaf, named ``<name>.v<i>`` in the order the values were given."""
        b = self.b
        pre = b.block
        head = b.append_basic_block(f"{name}.head")
        loop_body = b.append_basic_block(f"{name}.body")
        done = b.append_basic_block(f"{name}.done")
        b.branch(head)
        b.position_at_end(head)
        shape = list(carried.values())
        init = _leaves(shape)
        phis = [b.phi(v.type, name=f"{name}.v{i}") for i, v in enumerate(init)]
        for p, v in zip(phis, init, strict=True):
            p.add_incoming(v, pre)
        v = SimpleNamespace(**dict(zip(carried, _rebuild(shape, iter(phis)), strict=True)))
        b.cbranch(cond(v), loop_body, done)
        b.position_at_end(loop_body)
        yield v
        if set(vars(v)) != set(carried):
            raise ValueError(f"loop {name}: the body may only assign {sorted(carried)}")
        for p, x in zip(phis, _leaves([getattr(v, k) for k in carried]), strict=True):
            p.add_incoming(x, b.block)
        b.branch(head)
        b.position_at_end(done)
        for k, x in zip(carried, _rebuild(shape, iter(phis)), strict=True):
            setattr(v, k, x)

    def if_else_values(
        self,
        cond: ir.Value,
        then: Callable[[], Sequence[Carried]],
        other: Callable[[], Sequence[Carried]],
        name: str = "sel",
    ) -> list:
        """Branch on a public condition; both arms return values of the same shapes (values,
        lists or dataclasses of them, as `loop` carries); returns them joined, same shapes."""
        b = self.b
        t_bb = b.append_basic_block(f"{name}.then")
        e_bb = b.append_basic_block(f"{name}.else")
        j_bb = b.append_basic_block(f"{name}.join")
        b.cbranch(cond, t_bb, e_bb)
        b.position_at_end(t_bb)
        shape = list(then())
        tv = _leaves(shape)
        t_end = b.block
        b.branch(j_bb)
        b.position_at_end(e_bb)
        ev = _leaves(list(other()))
        e_end = b.block
        b.branch(j_bb)
        b.position_at_end(j_bb)
        out = []
        for i, (x, y) in enumerate(zip(tv, ev, strict=True)):
            p = b.phi(x.type, name=f"{name}.{i}")
            p.add_incoming(x, t_end)
            p.add_incoming(y, e_end)
            out.append(p)
        return _rebuild(shape, iter(out))

    def when(self, cond: ir.Value, then: Callable[[list[ir.Value]], Sequence[ir.Value]],
             vals: Sequence[ir.Value], name: str = "when") -> list[ir.Value]:
        """vals = then(vals) if cond else vals."""
        return self.if_else_values(cond, lambda: then(list(vals)), lambda: list(vals), name)


# What a loop or a branch carries: a value, or a list or dataclass of them.
Carried = Any


def _leaves(vals: Sequence[Carried]) -> list[ir.Value]:
    out: list[ir.Value] = []
    for v in vals:
        if isinstance(v, ir.Value):
            out.append(v)
        elif dataclasses.is_dataclass(v):
            out += _leaves([getattr(v, f.name) for f in dataclasses.fields(v)])
        else:
            out += _leaves(list(v))
    return out


def _rebuild(shape: Sequence[Carried], leaves: Iterator[ir.Value]) -> list[Carried]:
    """``shape`` with its leaves replaced, in order, by ``leaves``."""
    out: list[Carried] = []
    for v in shape:
        if isinstance(v, ir.Value):
            out.append(next(leaves))
        elif dataclasses.is_dataclass(v):
            parts = _rebuild([getattr(v, f.name) for f in dataclasses.fields(v)], leaves)
            out.append(type(v)(*parts))
        else:
            out.append(_rebuild(list(v), leaves))
    return out


def _i32vec(idx: Sequence[int] | range) -> ir.Constant:
    idx = list(idx)
    return ir.Constant(ir.VectorType(i32, len(idx)), [ir.Constant(i32, i) for i in idx])
