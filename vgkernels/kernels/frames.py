"""Where a bulk function's vector spill slots fall: on a 32-byte boundary, whatever the caller's
stack.

The SysV ABI aligns the stack to 16 bytes at a call, and LLVM does not realign a frame for its
spills: a ymm or zmm slot 16 bytes off a 32-byte boundary splits each 32-byte access (Zen 4
runs 512-bit loads and stores as two 256-bit halves), and where a slot straddles a page, the
loop pays a page split every iteration.  Measured on Zen 4 (stack page offset at the call in
16-byte steps, design notes, "Zen 4, thirteenth session"): vaes_avx2 seal 4-64 KiB up to 2.06x
slower at some of the offsets 16 bytes off a 32-byte boundary (the driver's STACK_OFFSET, a
multiple of 64, never saw them), vaes_avx512 seal 512 B-4 KiB 1.04-1.22x at the offsets on
one (STACK_OFFSET among them): the two lay their frames out differently.

Two ways, by what LLVM does with the slots:

* ``realign``: ymm slots are laid out 16-byte aligned; an over-aligned object in the frame
  makes LLVM realign the stack pointer (``and rsp, -32``) and place every slot at its own
  alignment (vaes_avx2's bulk functions: seal 4-64 KiB 0.57-0.64x at a stack offset where
  the slots had been split, 0.97-1.03x at the others);
* ``aligned_call``: zmm slots are laid out 64-byte aligned from the callee's incoming stack
  pointer, so they are aligned when the call is made with the stack 64-byte aligned.  The
  caller pads its stack first (at most 48 bytes) and the callee's code stays as it is:
  with vaes_avx512's bulk functions realigned instead, seal measured 2-9% slower at
  512 B-1 KiB.  enc calls its carried function so (`bulk.BulkFn.call_carry`); dec is a call
  of its body so (`bulk.aligned_entry`), which costs open about 2 ns where the stack was
  aligned anyway (1-2 KiB 1.015-1.025x) and saves 1-12% where it was not.
"""

from __future__ import annotations

from collections.abc import Sequence

from llvmlite import ir

from ..ir.core import Emitter, i64, ptr, void

INT_ARG_REGS = 6  # SysV: the first six integer and pointer arguments go in registers


def _intrinsic(b: ir.IRBuilder, name: str, ret: ir.Type, args: list[ir.Type]) -> ir.Function:
    return Emitter(b.module, b).intrinsic(name, ret, args)


def _kept(b: ir.IRBuilder, p: ir.Value) -> None:
    """An empty asm that takes ``p``: LLVM keeps the object it points to (and its alignment)."""
    b.asm(ir.FunctionType(void, [ptr]), "", "r,~{memory}", [p], True)


def realign(b: ir.IRBuilder, align: int) -> None:
    """Make the function under construction realign its stack pointer to ``align`` bytes: an
    object of that alignment in its entry block, kept by an empty asm."""
    with b.goto_entry_block():
        slot = b.alloca(ir.ArrayType(ir.IntType(8), align))
        slot.align = align
        slot.type = ptr  # opaque pointers (llvmlite types allocas as typed ones)
    _kept(b, slot)


def pad_stack(b: ir.IRBuilder, residue: ir.Value | int, modulus: int,
              when: ir.Value | None = None) -> ir.Value:
    """Move the stack pointer down to ``residue`` modulo ``modulus`` (a power of two; only
    ``when`` it is given and true), by a dynamic alloca of at most ``modulus - 16`` bytes.
    Returns the saved stack pointer, for `restore_stack`.  Also the bench driver's way of
    placing the stack at a page offset."""
    saved = b.call(_intrinsic(b, "llvm.stacksave.p0", ptr, []), [])
    sp = b.ptrtoint(saved, i64)
    res = ir.Constant(i64, residue) if isinstance(residue, int) else residue
    pad = b.and_(b.sub(sp, res), ir.Constant(i64, modulus - 1))
    if when is not None:
        pad = b.select(when, pad, ir.Constant(i64, 0))
    room = b.alloca(ir.IntType(8), size=pad, name="stack_pad")
    room.align = 16
    room.type = ptr
    _kept(b, room)
    return saved


def restore_stack(b: ir.IRBuilder, saved: ir.Value) -> None:
    b.call(_intrinsic(b, "llvm.stackrestore.p0", void, [ptr]), [saved])


def stack_arg_bytes(args: Sequence[ir.Value]) -> int:
    """Bytes the caller pushes for ``args`` past the six in registers (8 each, the area
    rounded to 16: the ABI's alignment at the call)."""
    extra = 8 * max(0, len(args) - INT_ARG_REGS)
    return (extra + 15) // 16 * 16


def aligned_call(b: ir.IRBuilder, fn: ir.Function, args: Sequence[ir.Value],
                 align: int = 64) -> ir.CallInstr:
    """Call ``fn`` with the stack pointer at the call ``align``-byte aligned: the stack is
    padded to stack_arg_bytes modulo align (the argument area pushed after the pad brings it
    to 0), then restored."""
    saved = pad_stack(b, stack_arg_bytes(args), align)
    r = b.call(fn, list(args))
    restore_stack(b, saved)
    return r


__all__ = ["aligned_call", "pad_stack", "realign", "restore_stack", "stack_arg_bytes"]
