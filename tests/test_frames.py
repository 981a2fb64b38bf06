"""The bulk functions' vector spill slots lie on 32-byte boundaries whatever the caller's stack
(`vgkernels.kernels.frames`): read in the machine code, so it holds on any host."""

from __future__ import annotations

import re

import pytest
from llvmlite import ir

from vgkernels import listing
from vgkernels.backends import get
from vgkernels.kernels import frames
from vgkernels.variant import Variant

CPU = "znver4"
_SLOT = re.compile(r"(-?\d*)\(%rsp\)")


def _functions(backend: str) -> dict[str, str]:
    be = get(backend)
    _, text = listing.assembly(be, Variant().resolved(be, CPU), CPU)
    return listing.functions(text)


def _vector_slots(fn_text: str, reg: str) -> list[int]:
    """Displacements of the rsp-relative accesses of ``reg`` registers (ymm, zmm)."""
    out = []
    for line in fn_text.splitlines():
        ins = line.split("#")[0]
        if f"%{reg}" in ins:
            out += [int(m.group(1) or 0) for m in _SLOT.finditer(ins)]
    return out


def _prologue(fn_text: str) -> tuple[int, int, int | None]:
    """(pushes, bytes subtracted from rsp, the realignment mask or None) before the body."""
    pushes = sub = 0
    mask = None
    for line in fn_text.splitlines()[1:]:
        ins = line.split("#")[0].strip()
        if ins.startswith("pushq"):
            pushes += 1
        elif m := re.fullmatch(r"andq\s+\$(-\d+), %rsp", ins):
            mask = int(m.group(1))
        elif m := re.fullmatch(r"subq\s+\$(\d+), %rsp", ins):
            sub = int(m.group(1))
            break
        elif ins and not ins.startswith((".", "movq\t%rsp, %rbp", "movq %rsp, %rbp")):
            break
    return pushes, sub, mask


def test_packed_args_round_trip():
    """has_len and pub_ctr through one argument and back, compiled and run: -1 (no public
    counter) and the largest 32-bit counter included."""
    import ctypes

    from vgkernels import jit
    from vgkernels.kernels import bulk

    m = ir.Module()
    i64 = ir.IntType(64)
    f = ir.Function(m, ir.FunctionType(i64, [ir.IntType(1), i64]), "roundtrip")
    b = ir.IRBuilder(f.append_basic_block())
    (packed,) = bulk.packed_args(b, list(f.args))
    has_len, pub = bulk.unpacked(b, packed)
    # pub * 2 + has_len again, from the unpacked values (an i1 that came back wrong shows)
    b.ret(b.add(b.mul(pub, ir.Constant(i64, 4)), b.zext(has_len, i64)))
    lib = jit.compile_ir("vg_test_packed", str(m), "")
    fn = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_bool, ctypes.c_int64)(
        lib.address("roundtrip"))
    for pub_ctr, h in ((-1, False), (-1, True), (2, True), (2**32 - 1, False), (0, True)):
        assert fn(h, pub_ctr) == pub_ctr * 4 + h


def test_pad_stack_places_the_stack_pointer():
    """`frames.pad_stack` (the kernels' aligned calls and the bench driver's stack offset),
    compiled and run: the stack pointer after the pad is at the residue asked for, and where it
    was when ``when`` is false."""
    import ctypes

    from vgkernels import jit

    i64 = ir.IntType(64)
    m = ir.Module()
    for modulus in (64, 4096):
        # (residue, when) -> stack pointer after the pad, less the one before (<= 0)
        f = ir.Function(m, ir.FunctionType(i64, [i64, ir.IntType(1)]), f"moved{modulus}")
        b = ir.IRBuilder(f.append_basic_block())
        saved = frames.pad_stack(b, f.args[0], modulus, when=f.args[1])
        sp = b.ptrtoint(b.call(m.globals["llvm.stacksave.p0"], []), i64)
        frames.restore_stack(b, saved)
        b.ret(b.sub(sp, b.ptrtoint(saved, i64)))
        g = ir.Function(m, ir.FunctionType(i64, [i64]), f"sp{modulus}")
        b = ir.IRBuilder(g.append_basic_block())
        saved = frames.pad_stack(b, g.args[0], modulus)
        sp = b.ptrtoint(b.call(m.globals["llvm.stacksave.p0"], []), i64)
        frames.restore_stack(b, saved)
        b.ret(sp)
    lib = jit.compile_ir("vg_test_pad_stack", str(m), "")
    for modulus, residues in ((64, (0, 16, 32, 48)), (4096, (0, 16, 1040, 2560, 4080))):
        moved = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_int64, ctypes.c_bool)(
            lib.address(f"moved{modulus}"))
        sp = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_int64)(lib.address(f"sp{modulus}"))
        for r in residues:
            assert sp(r) % modulus == r
            assert -modulus < moved(r, True) <= 0
            assert moved(r, False) == 0


def test_stack_arg_bytes():
    a = [ir.Constant(ir.IntType(64), 0)] * 9
    assert [frames.stack_arg_bytes(a[:k]) for k in (0, 6, 7, 8, 9)] == [0, 0, 16, 16, 32]


def test_ymm_bulk_frames_are_realigned():
    """vaes_avx2: every bulk function that keeps ymm values on its stack realigns it to 32
    bytes, and every such access is at a multiple of 32 from the realigned pointer."""
    funcs = {k: v for k, v in _functions("vaes_avx2").items() if k.startswith("vg.bulk.")}
    checked = 0
    for name, text in funcs.items():
        slots = _vector_slots(text, "ymm")
        if not slots:
            continue
        _, _, mask = _prologue(text)
        assert mask is not None and mask <= -32, f"{name}: ymm on the stack, not realigned"
        assert all(d % 32 == 0 for d in slots), f"{name}: {sorted(set(slots))}"
        checked += 1
    assert checked >= 3  # the lead, enc and dec functions at least


def test_zmm_frames_aligned_from_the_call():
    """vaes_avx512: the carried functions' and dec's zmm slots are 64-byte aligned from their
    incoming stack pointer (LLVM's layout), and vg.bulk.enc and vg.bulk.dec call them with the
    stack 64-byte aligned: the callees take six arguments (`bulk.packed_args`), so nothing is
    pushed between the pad and the call.  (Not the two-slice form's: called so, it measured
    slower, `BulkFn.call_carry`.)"""
    funcs = _functions("vaes_avx512")
    called = [k for k in funcs
              if re.fullmatch(r"vg\.bulk\.(encreg\.\d+|dec\.\d+\.body)", k)]
    assert len(called) == 6
    for name in called:
        pushes, sub, mask = _prologue(funcs[name])
        assert mask is None  # left as LLVM laid it out: aligned_call aligns it
        slots = _vector_slots(funcs[name], "zmm")
        assert slots, f"{name}: no zmm spill (update this test and frames' docstring)"
        # the call site's rsp C = 0 (mod 64): the slot is at C - 8 - 8 pushes - sub + d
        bad = sorted({d for d in slots if (d - 8 - 8 * pushes - sub) % 64})
        assert not bad, f"{name}: zmm slots off a 64-byte boundary: {bad}"
    for caller, callee in (("vg.bulk.enc.{}", "vg.bulk.encreg.{}"),
                           ("vg.bulk.dec.{}", "vg.bulk.dec.{}.body")):
        for nr in (10, 12, 14):
            text = funcs[caller.format(nr)]
            body = text.split("#NO_APP")
            assert len(body) >= 2, f"{caller.format(nr)}: no pad"
            seq = body[-1].split(f"callq\t{callee.format(nr)}\n")[0]
            pushed = (8 * len(re.findall(r"\bpushq\b", seq))
                      + sum(int(x) for x in re.findall(r"subq\s+\$(\d+), %rsp", seq)))
            assert pushed == 0, f"{caller.format(nr)}: {pushed} bytes pushed after the pad"


@pytest.mark.parametrize("backend", ["aesni_pclmul_avx", "vaes_avx512"])
def test_other_backends_keep_their_frames(backend):
    """Only ymm frames are realigned: xmm slots are 16-byte ones, and realigning vaes_avx512's
    functions measured slower than aligning the call (`frames`)."""
    for name, text in _functions(backend).items():
        if name.startswith("vg.bulk."):
            assert _prologue(text)[2] is None, name
