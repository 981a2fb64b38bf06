"""Compilation: the disk cache (a second process compiles nothing), IR and assembly text, and
AOT export linked into a C program whose output matches the reference model."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import textwrap

import pytest

from vgkernels import aot, spec
from vgkernels.backends import availability, get
from vgkernels.build import kernels
from vgkernels.kernels import generate
from vgkernels.variant import Variant


def test_ir_and_asm_are_inspectable():
    k = kernels("aesni_pclmul")
    assert "llvm.x86.aesni.aesenc" in k.ir()
    assert "llvm.x86.pclmulqdq" in k.ir()
    asm = k.asm()
    assert "aesenc" in asm and "pclmulqdq" in asm
    assert "vaesenc" not in asm, "the legacy-SSE backend must not use VEX encoding"


def test_portable_uses_no_x86_intrinsics():
    _, text = generate(get("portable"))
    assert "llvm.x86." not in text
    asm = kernels("portable").asm()
    instructions = re.findall(r"^\s+(v?aes\w+|v?pclmul\w*)\s", asm, flags=re.M)
    assert instructions == [], f"portable code uses {sorted(set(instructions))}"
    assert re.findall(r"^\s+v?aesenc\s", kernels("aesni_pclmul").asm(), flags=re.M)


def test_second_process_compiles_nothing(tmp_path):
    env = dict(os.environ, VG_CACHE_DIR=str(tmp_path))
    code = textwrap.dedent("""
        from vgkernels.build import kernels
        from vgkernels.variant import Variant
        k = kernels("aesni_pclmul_avx", Variant(group=4))
        print(k.library.from_cache, k.library.compile_seconds)
    """)
    first = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                           check=True).stdout.split()
    second = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                            text=True, check=True).stdout.split()
    assert first[0] == "False" and float(first[1]) > 0
    assert second == ["True", "0.0"]
    assert any(p.suffix == ".vgko" for p in tmp_path.iterdir())


def test_cache_key_separates_targets():
    from vgkernels import jit

    _, text = generate(get("aesni_pclmul"))
    a = jit.cache_key(text, get("aesni_pclmul").llvm_features, "znver4")
    b = jit.cache_key(text, get("aesni_pclmul").llvm_features, "skylake")
    c = jit.cache_key(text + " ", get("aesni_pclmul").llvm_features, "znver4")
    assert len({a, b, c}) == 3


C_PROGRAM = r"""
#include <stdio.h>
#include <string.h>
#include "HEADER"
static unsigned char ctx[PREFIX_CTX_SIZE + 64] __attribute__((aligned(64)));
int main(void) {
    unsigned char key[32], nonce[12], aad[13], buf[1000], tag[16];
    for (int i = 0; i < 32; i++) key[i] = (unsigned char)(7 * i + 1);
    for (int i = 0; i < 12; i++) nonce[i] = (unsigned char)(3 * i);
    for (int i = 0; i < 13; i++) aad[i] = (unsigned char)(100 + i);
    for (int i = 0; i < 1000; i++) buf[i] = (unsigned char)(i * 13);
    static unsigned char unset[PREFIX_CTX_SIZE] __attribute__((aligned(64)));
    if (PREFIX_seal(unset, nonce, 12, aad, 13, buf, 1000, tag) != PREFIX_RC_CONTEXT) return 8;
    if (PREFIX_key_init(unset, key, 20) != PREFIX_KEY_INIT_BAD_LENGTH) return 9;
    if (PREFIX_seal(unset, nonce, 12, aad, 13, buf, 1000, tag) != PREFIX_RC_CONTEXT) return 10;
    for (int i = 0; i < 1000; i++) if (buf[i] != (unsigned char)(i * 13)) return 11;
    if (PREFIX_key_init(ctx, key, KEYLEN) != PREFIX_RC_OK) return 2;
    if (PREFIX_seal(ctx, nonce, 12, aad, 13, buf, 1000, tag) != 0) return 3;
    for (int i = 0; i < 1000; i++) printf("%02x", buf[i]);
    printf(" ");
    for (int i = 0; i < 16; i++) printf("%02x", tag[i]);
    printf("\n");
    if (PREFIX_open(ctx, nonce, 12, aad, 13, buf, 1000, tag, 16) != 0) return 4;
    for (int i = 0; i < 1000; i++) if (buf[i] != (unsigned char)(i * 13)) return 5;
    tag[0] ^= 1;
    if (PREFIX_open(ctx, nonce, 12, aad, 13, buf, 1000, tag, 16) != PREFIX_RC_BAD_TAG) return 6;
    for (int i = 0; i < 1000; i++) if (buf[i] != 0) return 7;  /* wiped */
    return 0;
}
"""


@pytest.mark.parametrize("backend", ["aesni_pclmul", "vaes_avx512"])
@pytest.mark.parametrize("keylen", [16, 32])
def test_aot_object_links_and_matches_reference(tmp_path, backend, keylen):
    why = availability()[backend]
    if why is not None:
        pytest.skip(f"{backend}: {why}")
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler (cc) on this machine")
    variant = Variant(group=8) if backend == "vaes_avx512" else None
    obj, hdr = aot.export(backend, tmp_path, variant)
    prefix = obj.stem
    up = prefix.upper()
    src = (C_PROGRAM.replace("HEADER", hdr.name).replace("PREFIX_CTX_SIZE", f"{up}_CTX_SIZE")
           .replace("PREFIX_RC_", f"{up}_RC_")
           .replace("PREFIX_KEY_INIT_BAD_LENGTH", f"{up}_KEY_INIT_BAD_LENGTH")
           .replace("PREFIX", prefix).replace("KEYLEN", str(keylen)))
    (tmp_path / "main.c").write_text(src)
    exe = tmp_path / "main"
    subprocess.run([cc, "-O1", "-o", str(exe), str(tmp_path / "main.c"), str(obj)], check=True,
                   cwd=tmp_path)
    out = subprocess.run([str(exe)], capture_output=True, text=True)
    assert out.returncode == 0, f"C program exit {out.returncode}"
    ct_hex, tag_hex = out.stdout.split()
    key = bytes((7 * i + 1) & 255 for i in range(32))[:keylen]
    ct, tag = spec.seal(key, bytes(3 * i for i in range(12)), bytes((i * 13) & 255
                        for i in range(1000)), bytes(100 + i for i in range(13)))
    assert bytes.fromhex(ct_hex) == ct
    assert bytes.fromhex(tag_hex) == tag
    assert f"int {prefix}_seal_gather(" in hdr.read_text()
