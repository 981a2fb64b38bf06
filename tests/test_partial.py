"""The partial-block loads and stores (`vgkernels.ir.partial`) on their own: every length
0..16, the bytes next to a guard page, both forms (general registers, and the x86 vector
form with its byte shuffle), against the bytes themselves."""

from __future__ import annotations

import ctypes

import pytest
from helpers import GuardedSlots, rbytes, rng
from llvmlite import ir

from vgkernels import backends, jit
from vgkernels.ir import partial
from vgkernels.ir.core import Emitter, i64, ptr, void

FEATURES = backends.get("aesni_pclmul").llvm_features  # the oldest x86 set: SSSE3's pshufb
SIG = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64, ctypes.c_void_p)
# both forms, the bytes ending at a guard page or starting right after one
EVERY = pytest.mark.parametrize(("form", "where"), [(f, w) for f in ("gpr", "vec")
                                                    for w in ("end", "start")])


def _module() -> str:
    """ld_gpr / ld_vec(p, n, out): out[0:16] = the n bytes at p, zero padded.
    st_gpr / st_vec(p, n, src): the first n bytes of src[0:16] stored at p."""
    m = ir.Module("t_partial")
    for name, body in (
        ("ld_gpr", lambda em, p, n, o: em.store(em.from_i128(partial.load_partial(em, p, n)),
                                                o, 0)),
        ("ld_vec", lambda em, p, n, o: em.store(partial.load_partial_vec(em, p, n), o, 0)),
        ("st_gpr", lambda em, p, n, s: partial.store_partial(em, p, n,
                                                             em.to_i128(em.load(s, 0)))),
        ("st_vec", lambda em, p, n, s: partial.store_partial_vec(em, p, n, em.load(s, 0))),
    ):
        fn = ir.Function(m, ir.FunctionType(void, [ptr, i64, ptr]), name=name)
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        body(Emitter(m, b), *fn.args)
        b.ret_void()
    return str(m)


def _addr(slots: GuardedSlots, where: str, n: int) -> int:
    """Where n bytes start: ending at the guard page after slot 0, or right after the one
    before it."""
    return slots.guard_addr(0) - n if where == "end" else slots.base + slots.data_start(0)


@pytest.fixture(scope="module")
def lib():
    return jit.compile_ir("t_partial", _module(), FEATURES, "x86-64")


@pytest.fixture
def slots():
    s = GuardedSlots(2)
    yield s
    s.close()


def _setup(lib, op: str, form: str, where: str):
    """The compiled function, a seeded generator, a 16-byte scratch block."""
    return (SIG(lib.address(f"{op}_{form}")), rng("partial", op, form, where),
            ctypes.create_string_buffer(16))


@EVERY
def test_loads_read_exactly_n_bytes(lib, slots, form, where):
    fn, r, out = _setup(lib, "ld", form, where)
    for n in range(16):
        data = rbytes(r, n)
        slots.put(where, 0, data)
        addr = _addr(slots, where, n)
        ctypes.memset(out, 0xA5, 16)
        fn(addr, n, ctypes.addressof(out))
        assert out.raw == data + bytes(16 - n), f"n = {n}"


@EVERY
def test_stores_write_exactly_n_bytes(lib, slots, form, where):
    fn, r, src = _setup(lib, "st", form, where)
    for n in range(17):
        block = rbytes(r, 16)
        ctypes.memmove(src, block, 16)
        whole = slots.start(0, 64) if where == "start" else slots.end(0, 64)
        whole[:] = b"\x5a" * 64
        fn(_addr(slots, where, n), n, ctypes.addressof(src))
        want = (b"\x5a" * (64 - n) + block[:n]) if where == "end" else \
            (block[:n] + b"\x5a" * (64 - n))
        assert bytes(whole) == want, f"n = {n}"
