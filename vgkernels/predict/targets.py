"""The CPUs to predict for, and which backends each can run.

A CPU's features are LLVM's own definition of it (the one llvm-mca models): each feature a
backend row needs is probed by asking ``llc`` from the same LLVM package to select one of
that feature's intrinsics for ``-mcpu=NAME``; it fails ("Cannot select") when the CPU lacks
the feature.  No hand-written table to drift out of step with LLVM.
"""

from __future__ import annotations

import functools
import os
import subprocess
from pathlib import Path

from ..backends import BACKENDS, Backend
from . import mca

CPUS: tuple[str, ...] = ("znver3", "znver4", "znver5", "icelake-server", "sapphirerapids")
LLC_NAMES = ("llc-19", "llc")
LLC_DIRS = (Path("/usr/lib/llvm-19/bin"),)

# feature (vgkernels.cpu names) -> (declaration, call) of an intrinsic only that feature has
_V2, _V4, _V8 = "<2 x i64>", "<4 x i64>", "<8 x i64>"
_PROBES: dict[str, tuple[str, str]] = {
    "aes": (f"{_V2} @llvm.x86.aesni.aesenc({_V2}, {_V2})", f"{_V2} %a, {_V2} %a"),
    "pclmulqdq": (f"{_V2} @llvm.x86.pclmulqdq({_V2}, {_V2}, i8)", f"{_V2} %a, {_V2} %a, i8 1"),
    "ssse3": ("<16 x i8> @llvm.x86.ssse3.pshuf.b.128(<16 x i8>, <16 x i8>)",
              "<16 x i8> %b, <16 x i8> %b"),
    "avx": ("i32 @llvm.x86.avx.vtestz.ps.256(<8 x float>, <8 x float>)",
            "<8 x float> %f, <8 x float> %f"),
    "avx2": ("<32 x i8> @llvm.x86.avx2.pshuf.b(<32 x i8>, <32 x i8>)",
             "<32 x i8> %y, <32 x i8> %y"),
    "avx512f": ("<16 x i32> @llvm.x86.avx512.pternlog.d.512(<16 x i32>, <16 x i32>, "
                "<16 x i32>, i32)", "<16 x i32> %z, <16 x i32> %z, <16 x i32> %z, i32 1"),
    "avx512bw": ("<64 x i8> @llvm.x86.avx512.pshuf.b.512(<64 x i8>, <64 x i8>)",
                 "<64 x i8> %zb, <64 x i8> %zb"),
    "avx512vl": ("<4 x i32> @llvm.x86.avx512.vpermi2var.d.128(<4 x i32>, <4 x i32>, "
                 "<4 x i32>)", "<4 x i32> %d, <4 x i32> %d, <4 x i32> %d"),
    "vaes": (f"{_V4} @llvm.x86.aesni.aesenc.256({_V4}, {_V4})", f"{_V4} %q, {_V4} %q"),
    "vpclmulqdq": (f"{_V4} @llvm.x86.pclmulqdq.256({_V4}, {_V4}, i8)",
                   f"{_V4} %q, {_V4} %q, i8 1"),
}
_ARGS = (f"{_V2} %a, <16 x i8> %b, <8 x float> %f, <32 x i8> %y, <16 x i32> %z, <64 x i8> %zb, "
         f"<4 x i32> %d, {_V4} %q")


@functools.cache
def find_llc() -> Path | None:
    """llc of LLVM mca.MIN_MAJOR or newer (llc-19 / llc on PATH, /usr/lib/llvm-19/bin): an
    older one (Debian 12's plain `llc` is LLVM 14) does not know the CPUs the table names."""
    recent = (p for p in mca.candidates(LLC_NAMES, LLC_DIRS, "llc")
              if not mca.too_old(mca.tool_version(p)))
    return next(recent, None)


def _probe_ir(feature: str) -> str:
    decl, args = _PROBES[feature]
    ret, rest = decl.split(" @", 1)
    name = "@" + rest.split("(", 1)[0]
    return (f"declare {decl}\n"
            f"define {ret} @probe({_ARGS}) {{\n"
            f"  %r = call {ret} {name}({args})\n  ret {ret} %r\n}}\n")


@functools.cache
def cpu_features(cpu: str) -> frozenset[str]:
    """The features (vgkernels.cpu names) LLVM's model of ``cpu`` has, among those the
    backend rows need."""
    llc = find_llc()
    if llc is None:
        raise RuntimeError("llc not found (it comes with llvm-mca in Debian's llvm-19 "
                           "package: apt-get install -y llvm-19)")
    env = {**os.environ, "LLVM_DISABLE_SYMBOLIZATION": "1"}
    have = set()
    for feat in _PROBES:
        r = subprocess.run([str(llc), "-mtriple=x86_64-unknown-linux-gnu", f"-mcpu={cpu}",
                            "-filetype=null", "-o", os.devnull], input=_probe_ir(feat),
                           capture_output=True, text=True, check=False, env=env)
        if "is not a recognized processor" in r.stderr:
            raise ValueError(f"LLVM does not know the CPU {cpu!r}")
        if r.returncode == 0:
            have.add(feat)
    return frozenset(have)


def supported(cpu: str, include_portable: bool = False) -> list[Backend]:
    """The backend rows ``cpu`` has every feature of (portable only when asked: its
    table-free AES is thousands of instructions per iteration and no design question)."""
    have = cpu_features(cpu)
    return [b for b in BACKENDS if not b.missing(have)
            and (include_portable or b.prims != "portable")]


__all__ = ["CPUS", "cpu_features", "find_llc", "supported"]
