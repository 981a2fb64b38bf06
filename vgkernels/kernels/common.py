"""What every kernel generator shares: the build parameters and function scaffolding."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from llvmlite import ir

from .. import abi
from ..backends import Backend
from ..ir import prims as prims_mod
from ..ir.core import Emitter, i32, i64, ptr
from ..ir.ghash import Ghash
from ..variant import Variant

NR = (10, 12, 14)


@dataclass
class Params:
    backend: Backend
    variant: Variant  # resolved
    prefix: str  # exported symbols are f"{prefix}_{op}"
    cpu: str = ""  # the LLVM CPU the code is scheduled for ("": not known, generic choices)

    @property
    def w(self) -> int:
        return self.backend.width

    @property
    def g(self) -> int:
        return self.variant.group  # type: ignore[return-value]

    @property
    def v(self) -> int:
        return self.g // self.w


def one_block_wide(be: Backend) -> bool:
    """An x86 backend whose vectors hold one block (xmm): 16 registers, no masks."""
    return be.prims == "x86" and not be.masked and be.width == 1


def libc_copies(be: Backend) -> bool:
    """Whether the kernels copy a text piece with libc (`Emitter.memmove`) rather than their
    own moves: on the backends without VEX, whose own copy has 16-byte moves where libc moves as
    wide as the CPU allows (measured on the SSE backend: `short.build_record_copy`,
    `gather.LIBC_FROM`)."""
    return not be.vex


class KeysWhereUsed(Sequence[ir.Value]):
    """Round keys 0..nr, each loaded (``load(r)``) where its round first asks for it, not all
    before the first round.  Program order is the schedule here, so a key holds a register
    only while its round runs.  And the arms of a switch no longer begin with the same loads,
    which LLVM would hoist above the switch, live through every arm."""

    def __init__(self, load: Callable[[int], ir.Value], nr: int):
        self._load, self._nr, self._keys = load, nr, {}

    def __len__(self) -> int:
        return self._nr + 1

    def __getitem__(self, r: int) -> ir.Value:  # type: ignore[override]
        if not 0 <= r <= self._nr:
            raise IndexError(r)
        if r not in self._keys:
            self._keys[r] = self._load(r)
        return self._keys[r]


class Fn:
    """A function under construction: its IR function, emitter, primitives and GHASH."""

    def __init__(self, module: ir.Module, params: Params, name: str, ret: ir.Type,
                 args: list[ir.Type], exported: bool = False):
        self.params = params
        self.fn = ir.Function(module, ir.FunctionType(ret, args), name=name)
        if not exported:
            self.fn.linkage = "internal"
        self.fn.attributes.add("nounwind")
        self.em = Emitter(module, ir.IRBuilder(self.fn.append_basic_block("entry")))
        self.b = self.em.b
        self.prims = prims_mod.make(params.backend.prims, self.em)
        # middle operands in pairs only on AVX-512: on vaes_avx2 LLVM merged the unpacks
        # into the byte swaps (vpshufb + vpblendd, seal 4-64 KiB 1.05-1.07x), on
        # aesni_pclmul_avx they measured no different (Zen 4, same run)
        self.gh = Ghash(self.em, self.prims, bool(params.variant.karatsuba),
                        paired=params.backend.masked)
        self.args = self.fn.args

    def round_keys(self, ctx: ir.Value, nr: int, w: int, where_used: bool = False
                   ) -> Sequence[ir.Value]:
        """The round keys, loaded invariant on the one-block-wide x86 backends (16 registers,
        11 of them keys at AES-128: see `reloadable_keys`).  On vaes_avx2 it changed only the
        VAES chunks: seal 300-512 B 0.93-0.98x but open 257-512 B 1.02-1.07x (Zen 3), not
        kept.  ``where_used``: each loaded where its round first uses it (`KeysWhereUsed`)."""
        load = self.em.load_invariant if one_block_wide(self.params.backend) else self.em.load

        def key(r: int) -> ir.Value:
            return self.em.broadcast(load(ctx, abi.CTX_ROUND_KEYS + 16 * r), w)
        if where_used:
            return KeysWhereUsed(key, nr)
        return [key(r) for r in range(nr + 1)]

    def reloadable_keys(self) -> None:
        """The key context (argument 0) dereferenceable: with the round keys' loads invariant
        (`round_keys`) LLVM may load a key again where it would spill another value.  Only on
        the one-block-wide backends, which load the keys invariant."""
        assert one_block_wide(self.params.backend)
        self.readable_ctx()

    def readable_ctx(self) -> None:
        """The key context (argument 0) dereferenceable: its invariant loads may be moved or
        repeated where they are used."""
        self.fn.args[0].attributes.dereferenceable = abi.CTX_SIZE

    def bcast_power(self, ctx: ir.Value, e: int, folded: bool = False) -> ir.Value:
        """H^e in four lanes (or its half-sum) from the context's broadcast table."""
        return self.em.load_invariant(ctx, abi.bcast_offset(e, folded), 4)

    def power(self, ctx: ir.Value, k: int | ir.Value, w: int) -> ir.Value:
        """W powers from H^k downwards (zero lanes past H^1): the descending table order."""
        if isinstance(k, int):
            return self.em.load(ctx, abi.power_offset(k), w)
        end = abi.CTX_POWERS + 16 * abi.CTX_NPOW
        off = self.b.sub(ir.Constant(i64, end), self.b.shl(k, ir.Constant(i64, 4)))
        return self.em.load(ctx, off, w)

    def nrounds(self, ctx: ir.Value) -> ir.Value:
        return self.em.load_int(ctx, abi.CTX_NROUNDS, i32)

    def fail_closed(self, ctx: ir.Value) -> None:
        """Return RC_CONTEXT unless key_init finished on ``ctx``: the magic word and a round
        count of 10, 12 or 14.  A context never set up, whose key_init failed, or wiped, gives
        an error before anything is read from the caller's buffers or written to them."""
        b = self.b
        nr = self.nrounds(ctx)
        good = b.and_(
            b.icmp_unsigned("==", self.em.load_int(ctx, abi.CTX_MAGIC, i32),
                            ir.Constant(i32, abi.CTX_MAGIC_VALUE)),
            b.or_(b.or_(b.icmp_unsigned("==", nr, ir.Constant(i32, 10)),
                        b.icmp_unsigned("==", nr, ir.Constant(i32, 12))),
                  b.icmp_unsigned("==", nr, ir.Constant(i32, 14))))
        with b.if_then(b.not_(good), likely=False):
            b.ret(ir.Constant(i32, abi.RC_CONTEXT))

    def dispatch_nr(self, ctx: ir.Value, arm) -> None:
        """switch (ctx->nrounds) { case 10/12/14: arm(nr) }; arm emits code, no values.  An arm
        may end in its own return; the others, and any other round count, continue after."""
        b = self.b
        done = b.append_basic_block("nr.done")
        sw = b.switch(self.nrounds(ctx), done)
        for nr in NR:
            bb = b.append_basic_block(f"nr{nr}")
            sw.add_case(ir.Constant(i32, nr), bb)
            b.position_at_end(bb)
            arm(nr)
            if not b.block.is_terminated:
                b.branch(done)
        b.position_at_end(done)

    def alloca_block(self, n: int = 1) -> ir.Value:
        """Stack room for n 16-byte blocks, in the entry block (so mem2reg/SROA see it)."""
        b = self.b
        with b.goto_entry_block():
            a = b.alloca(ir.ArrayType(ir.IntType(8), 16 * n))
            a.align = 16
            a.type = ptr  # llvmlite types allocas as typed pointers; LLVM 22 wants opaque ones
        return a


def within(b: ir.IRBuilder, n: ir.Value, first: int, count: int) -> ir.Value:
    """first <= n < first + count, as one unsigned compare (n - first wraps below first)."""
    return b.icmp_unsigned("<", b.sub(n, ir.Constant(n.type, first)), ir.Constant(n.type, count))


def copy_from_64(em: Emitter, src: ir.Value, n: ir.Value, dst: ir.Value) -> None:
    """n >= 64 bytes from src to dst, 64 at a time, the last 64 overlapping (no byte past
    either buffer; src == dst copies onto itself)."""
    b = em.b
    c = lambda x: ir.Constant(i64, x)  # noqa: E731
    last = b.sub(n, c(64))
    with em.loop("rcopy", lambda v: b.icmp_unsigned("<", v.off, last), off=c(0)) as v:
        lo, hi = em.load(src, v.off, 2), em.load(src, b.add(v.off, c(32)), 2)
        em.store(lo, dst, v.off)
        em.store(hi, dst, b.add(v.off, c(32)))
        v.off = b.add(v.off, c(64))
    lo, hi = em.load(src, last, 2), em.load(src, b.add(last, c(32)), 2)
    em.store(lo, dst, last)
    em.store(hi, dst, b.add(last, c(32)))
