"""GHASH's paired middle products (`Ghash.accumulate_outer` + `accumulate_middles`, used by the
AVX-512 loops) against the per-vector Karatsuba sum and the schoolbook one, on xmm (any x86
CPU with PCLMULQDQ) and on ymm where the CPU has VPCLMULQDQ: random blocks and key powers, and
the edge values (all ones, a single bit at either end of a half)."""

from __future__ import annotations

import ctypes

import pytest
from helpers import rbytes, rng
from llvmlite import ir

from vgkernels import backends, cpu, jit
from vgkernels.ir import prims as prims_mod
from vgkernels.ir.core import Emitter, ptr, void
from vgkernels.ir.ghash import Ghash

SIG = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p)
FORMS = ("paired", "karatsuba", "schoolbook")
EDGES = [b"\xff" * 16, b"\x80" + bytes(15), bytes(15) + b"\x01", bytes(7) + b"\x01\x80" + bytes(7)]


def _module(w: int) -> str:
    """<form>(in, out): in holds a, b, ha, hb (w blocks each); out = reduce(a*ha + b*hb)."""
    m = ir.Module(f"t_pairs{w}")
    for form in FORMS:
        fn = ir.Function(m, ir.FunctionType(void, [ptr, ptr]), name=form)
        em = Emitter(m, ir.IRBuilder(fn.append_basic_block("entry")))
        gh = Ghash(em, prims_mod.make("x86", em), karatsuba=form != "schoolbook",
                   paired=form == "paired")
        a, b, ha, hb = (em.load(fn.args[0], 16 * w * k, w) for k in range(4))
        if form == "paired":
            acc = gh.accumulate_middles(gh.accumulate_outer(gh.accumulate_outer(None, a, ha),
                                                            b, hb), a, ha, None, b, hb, None)
        else:
            acc = gh.accumulate(gh.accumulate(None, a, ha), b, hb)
        em.store(gh.reduce(acc), fn.args[1], 0)
        em.b.ret_void()
    return str(m)


def _features(w: int) -> str:
    return backends.get("aesni_pclmul_avx" if w == 1 else "vaes_avx2").llvm_features


@pytest.fixture(scope="module", params=[1, 2], ids=["xmm", "ymm"])
def lib(request):
    w = request.param
    need = {"pclmulqdq", "avx"} if w == 1 else {"vpclmulqdq", "avx2"}
    missing = need - cpu.usable_features()
    if missing:
        pytest.skip(f"this CPU lacks {', '.join(sorted(missing))}")
    return w, jit.compile_ir(f"t_pairs{w}", _module(w), _features(w), "x86-64")


def _run(lib, form: str, data: bytes) -> bytes:
    w, mod = lib
    inp = ctypes.create_string_buffer(data, 64 * w)
    out = ctypes.create_string_buffer(16 * w)
    SIG(mod.address(form))(ctypes.addressof(inp), ctypes.addressof(out))
    return out.raw


def test_paired_middles_match_per_vector_sums(lib):
    w, _ = lib
    r = rng("ghash-pairs", w)
    cases = [rbytes(r, 64 * w) for _ in range(200)]
    cases += [b"".join(e * w for e in (x, y, z, t))
              for x in EDGES for y in EDGES for z in EDGES[:2] for t in EDGES[2:]]
    for data in cases:
        want = _run(lib, "schoolbook", data)
        assert _run(lib, "karatsuba", data) == want
        assert _run(lib, "paired", data) == want, data.hex()
