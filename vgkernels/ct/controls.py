"""Negative controls: small kernels with the C ABI of key_init, seal and open, each with one
deliberate leak, built and checked through the same path as the real kernels.

- ``key_init``: AES's S-box as a 256-byte table indexed by key bytes (the classic cache leak);
- ``open``: the tag compared byte by byte with an early exit (the position of the first wrong
  byte shows in the time);
- ``seal``: a branch on the first plaintext byte (extra work when it is zero).

They are not AES-GCM: only the leak matters, and it sits where a real kernel's would.
"""

from __future__ import annotations

import functools

from llvmlite import ir

from ..spec.aes import SBOX
from . import check

PREFIX = "vgct_ctl"
i1, i8, i32, i64 = ir.IntType(1), ir.IntType(8), ir.IntType(32), ir.IntType(64)
ptr = ir.PointerType()
FEATURES = "+sse2,-avx,-avx2,-avx512f"
CPU = "x86-64"


def _gep(b: ir.IRBuilder, p: ir.Value, off: ir.Value | int) -> ir.Value:
    off = ir.Constant(i64, off) if isinstance(off, int) else off
    return b.gep(p, [off], source_etype=i8)


def _loop(b: ir.IRBuilder, fn: ir.Function, n: ir.Value, body, name: str) -> None:
    """for (k = 0; k < n; k++) body(k)"""
    head, loop, done = (fn.append_basic_block(f"{name}.{s}") for s in ("head", "body", "done"))
    pre = b.block
    b.branch(head)
    b.position_at_end(head)
    k = b.phi(i64, name=f"{name}.k")
    k.add_incoming(ir.Constant(i64, 0), pre)
    b.cbranch(b.icmp_unsigned("<", k, n), loop, done)
    b.position_at_end(loop)
    body(k)
    k.add_incoming(b.add(k, ir.Constant(i64, 1)), b.block)
    b.branch(head)
    b.position_at_end(done)


def _key_init(m: ir.Module) -> None:
    table = ir.GlobalVariable(m, ir.ArrayType(i8, 256), "vgct.sbox")
    table.global_constant = True
    table.linkage = "internal"
    table.initializer = ir.Constant(ir.ArrayType(i8, 256), [ir.Constant(i8, x) for x in SBOX])
    fn = ir.Function(m, ir.FunctionType(i32, [ptr, ptr, i64]), f"{PREFIX}_key_init")
    ctx, key, n = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))

    def body(k):
        kb = b.load(_gep(b, key, k), typ=i8)
        sub = b.load(_gep(b, table, b.zext(kb, i64)), typ=i8, name="sbox_lookup")  # the leak
        b.store(sub, _gep(b, ctx, k))
    _loop(b, fn, n, body, "sub")
    b.ret(ir.Constant(i32, 0))


def _open(m: ir.Module) -> None:
    fn = ir.Function(m, ir.FunctionType(i32, [ptr, ptr, i64, ptr, i64, ptr, i64, ptr, i64]),
                     f"{PREFIX}_open")
    ctx, _, _, _, _, _, _, tag, tl = fn.args
    entry = fn.append_basic_block("entry")
    head, cmp, bad, good = (fn.append_basic_block(s) for s in ("head", "cmp", "bad", "good"))
    b = ir.IRBuilder(entry)
    b.branch(head)
    b.position_at_end(head)
    k = b.phi(i64, name="k")
    k.add_incoming(ir.Constant(i64, 0), entry)
    b.cbranch(b.icmp_unsigned("<", k, tl), cmp, good)
    b.position_at_end(cmp)
    want = b.load(_gep(b, ctx, k), typ=i8)  # the "computed tag": secret context bytes
    got = b.load(_gep(b, tag, k), typ=i8)
    k.add_incoming(b.add(k, ir.Constant(i64, 1)), cmp)
    b.cbranch(b.icmp_unsigned("!=", want, got, name="early_exit"), bad, head)  # the leak
    b.position_at_end(bad)
    b.ret(ir.Constant(i32, -1))
    b.position_at_end(good)
    b.ret(ir.Constant(i32, 0))


def _seal(m: ir.Module) -> None:
    fn = ir.Function(m, ir.FunctionType(i32, [ptr, ptr, i64, ptr, i64, ptr, i64, ptr]),
                     f"{PREFIX}_seal")
    ctx, _, _, _, _, inout, n, tag = fn.args
    entry = fn.append_basic_block("entry")
    slow, done = fn.append_basic_block("zero_byte"), fn.append_basic_block("done")
    b = ir.IRBuilder(entry)
    first = b.load(inout, typ=i8)
    b.cbranch(b.icmp_unsigned("==", first, ir.Constant(i8, 0), name="plain_byte"), slow, done)
    b.position_at_end(slow)  # extra work on a zero byte: 256 dependent xors through memory

    def body(k):
        x = b.load(_gep(b, ctx, b.and_(k, ir.Constant(i64, 15))), typ=i8)
        t = b.load(tag, typ=i8, name="acc")
        b.store(b.xor(t, x), tag)
    _loop(b, fn, ir.Constant(i64, 256), body, "extra")
    b.branch(done)
    b.position_at_end(done)
    b.store(b.load(ctx, typ=i8), tag)
    b.ret(ir.Constant(i32, 0))


def ir_text() -> str:
    m = ir.Module(name=PREFIX)
    _key_init(m)
    _open(m)
    _seal(m)
    return str(m)


@functools.cache
def check_controls() -> check.Report:
    """The controls through the same two checks as the kernels."""
    opt, obj = check.optimised(ir_text(), FEATURES, CPU)
    return check.check_ir("controls", "-", opt, PREFIX, obj, CPU)


__all__ = ["PREFIX", "check_controls", "ir_text"]
