"""Every backend is generated, verified, compiled and exported on every host, whether or not the
CPU can run it: a Zen 3 (no AVX-512) still checks vaes_avx512's kernels statically.  These tests
run no kernel; the conformance tests (which do) skip a backend the CPU lacks, with the reason."""

from __future__ import annotations

import re

import llvmlite.binding as llvm
import pytest
from helpers import BACKEND_NAMES, BY_NAME

from vgkernels import abi, aot, elf, jit
from vgkernels.kernels import generate

# ISA fingerprints of each row's code, as regexes over instruction lines ("mnemonic operands"):
# instructions it must use, and must not use.
MUST = {
    "portable": [],
    "aesni_pclmul": [r"^aesenc\b", r"^pclmulqdq\b"],
    "aesni_pclmul_avx": [r"^vaesenc\s+\S*%xmm", r"^vpclmulqdq\b"],
    "vaes_avx2": [r"^vaesenc\s+\S*%ymm", r"^vpclmulqdq\s+\$\w+, %ymm"],
    "vaes_avx512": [r"^vaesenc\s+\S*%zmm", r"^vpclmulqdq\s+\$\w+, %zmm"],
}
MUST_NOT = {
    "portable": [r"^v?aes", r"^v?pclmul", r"%[yz]mm"],  # baseline x86-64: SSE2 at most
    "aesni_pclmul": [r"^v[a-z]", r"%[yz]mm"],  # legacy SSE encoding: no VEX/EVEX instruction
    "aesni_pclmul_avx": [r"^v(aes\w*|pclmulqdq)\s.*%[yz]mm", r"%zmm", r"%k[1-7]"],  # no VAES
    "vaes_avx2": [r"%zmm", r"%k[1-7]"],
    "vaes_avx512": [],
}


@pytest.fixture(scope="module", params=BACKEND_NAMES)
def built(request, tmp_path_factory):
    be = BY_NAME[request.param]
    prefix, text = generate(be)
    obj, _hdr = aot.export(be, tmp_path_factory.mktemp(be.name))
    return be, prefix, text, obj


def test_ir_verifies(built):
    _be, _prefix, text, _obj = built
    jit.init()
    mod = llvm.parse_assembly(text)
    mod.verify()


def test_object_exports_every_c_abi_entry(built):
    be, prefix, _text, obj = built
    want = [f"{prefix}_{op}" for op in abi.SIGNATURES]
    if be.two_slice:
        want.append(f"{prefix}_seal_two_slice")
    found = elf.symbol_values(obj, want)
    assert sorted(set(want) - set(found)) == []


def test_code_uses_its_rows_instruction_set(built):
    be, _prefix, text, _obj = built
    asm = jit.emit_assembly(text, be.llvm_features, be.llvm_cpu)
    lines = [" ".join(line.split()) for line in asm.splitlines()
             if line.startswith("\t") and not line.lstrip().startswith((".", "#"))]
    for pat in MUST[be.name]:
        assert any(re.search(pat, x) for x in lines), f"{be.name}: no instruction {pat!r}"
    for pat in MUST_NOT[be.name]:
        bad = [x for x in lines if re.search(pat, x)]
        assert not bad, f"{be.name}: {pat!r} matched {bad[:3]}"
