"""Conformance vectors on every backend: all of Wycheproof's aes_gcm_test.json, and NIST CAVP
GCM encrypt/decrypt vectors (all 2 x 23625 of them: they are at most 51 bytes, ~1 s per backend;
`VG_TEST_NIST=sample` keeps every vector on one fast backend and a seeded sample of 100 per key
size on the others).  NIST tags are truncated to 4..16 bytes: encryption compares the tag prefix,
decryption goes through the C ABI's open_out with tag_len = the vector's."""

from __future__ import annotations

import ctypes
import functools
import os

import pytest
from helpers import TAG, bind, rng

from vgkernels.api import AesGcm, InvalidTag
from vgkernels.backends import usable
from vgkernels.spec import vectors

NIST_SAMPLE_PER_FILE = 100  # x 3 key sizes = 300 per kind per backend


@functools.cache
def wycheproof():
    return tuple(vectors.wycheproof_gcm())


@functools.cache
def nist(kind: str):
    return tuple(vectors.nist_gcm(kind))


@functools.cache
def all_nist_backend() -> str | None:
    """The backend that runs every NIST vector: the fastest usable one."""
    names = [b.name for b in usable()]
    for name in ("vaes_avx512", "vaes_avx2", "aesni_pclmul_avx", "aesni_pclmul"):
        if name in names:
            return name
    return None


def nist_for(backend: str, kind: str):
    vs = nist(kind)
    if os.environ.get("VG_TEST_NIST", "all") != "sample" or backend == all_nist_backend():
        return vs
    by_file: dict[str, list] = {}
    for v in vs:
        by_file.setdefault(v.source, []).append(v)
    r = rng("nist", kind, backend)
    return [v for src in sorted(by_file) for v in r.sample(by_file[src], NIST_SAMPLE_PER_FILE)]


def test_vector_files_are_complete():
    w = wycheproof()
    assert len(w) >= 256
    assert {len(v.key) for v in w} == {16, 24, 32}
    assert any(not v.valid for v in w) and any(len(v.nonce) == 0 for v in w)
    for kind in ("encrypt", "decrypt"):
        vs = nist(kind)
        assert {v.source.split("/")[-1][-7:-4] for v in vs} == {"128", "192", "256"}
        assert {v.tag_len for v in vs} == {4, 8, 12, 13, 14, 15, 16}
    assert any(not v.valid for v in nist("decrypt"))


def test_wycheproof(backend):
    failures = []
    for v in wycheproof():
        a = AesGcm(v.key, backend=backend)
        if not v.nonce:
            for fn, args in ((a.encrypt, (v.nonce, v.plaintext, v.aad)),
                             (a.decrypt, (v.nonce, v.ciphertext + v.tag, v.aad)),
                             (a.encryptor, (v.nonce,))):
                with pytest.raises(ValueError, match="nonce must be at least 1 byte"):
                    fn(*args)
            continue
        if v.valid:
            got = a.encrypt(v.nonce, v.plaintext, v.aad)
            if got != v.ciphertext + v.tag:
                failures.append((v.ident, "encrypt"))
            try:
                if a.decrypt(v.nonce, v.ciphertext + v.tag, v.aad) != v.plaintext:
                    failures.append((v.ident, "decrypt"))
            except InvalidTag:
                failures.append((v.ident, "decrypt raised InvalidTag"))
            buf = bytearray(v.ciphertext)
            a.decrypt_in_place(v.nonce, buf, v.aad, v.tag)
            if bytes(buf) != v.plaintext:
                failures.append((v.ident, "decrypt_in_place"))
            cut = len(v.plaintext) // 2 + 1
            if a.encrypt(v.nonce, [v.plaintext[:cut], v.plaintext[cut:]], v.aad,
                         copy_below=False) != v.ciphertext + v.tag:
                failures.append((v.ident, "gather"))
            enc = a.encryptor(v.nonce, v.aad[:3])
            enc.authenticate_additional_data(v.aad[3:])
            got = enc.update(v.plaintext[:cut]) + enc.update(v.plaintext[cut:])
            if got + enc.finalize() != v.ciphertext + v.tag:
                failures.append((v.ident, "stream"))
        else:
            try:
                a.decrypt(v.nonce, v.ciphertext + v.tag, v.aad)
                failures.append((v.ident, "invalid vector decrypted"))
            except InvalidTag:
                pass
            out = bytearray(b"\x11") * len(v.ciphertext)
            try:
                a.decrypt_into(out, v.nonce, v.ciphertext, v.aad, v.tag)
                failures.append((v.ident, "invalid vector decrypted (into)"))
            except InvalidTag:
                if out != bytearray(len(v.ciphertext)):
                    failures.append((v.ident, "out not wiped"))
    assert not failures, failures[:20]


def test_nist_encrypt(backend):
    failures = []
    for v in nist_for(backend, "encrypt"):
        got = AesGcm(v.key, backend=backend).encrypt(v.nonce, v.plaintext, v.aad)
        if got[:-TAG] != v.ciphertext or got[-TAG:][:v.tag_len] != v.tag:
            failures.append(f"{v.source} {v.ident}")
    assert not failures, failures[:20]


def test_nist_decrypt(backend):
    open_out = bind(backend, "open_out")
    failures = []
    for v in nist_for(backend, "decrypt"):
        a = AesGcm(v.key, backend=backend)
        n = len(v.ciphertext)
        out = ctypes.create_string_buffer(b"\x42" * (n + 1), n + 1)
        ct = ctypes.create_string_buffer(v.ciphertext, n + 1)
        rc = open_out(a.ctx, v.nonce, len(v.nonce), v.aad, len(v.aad), ct, out, n, v.tag,
                      v.tag_len)
        where = f"{v.source} {v.ident}"
        if v.valid:
            if rc != 0 or out.raw[:n] != v.plaintext:
                failures.append(f"{where}: rc={rc}")
            if v.tag_len == TAG and a.decrypt(v.nonce, v.ciphertext + v.tag, v.aad) != v.plaintext:
                failures.append(f"{where}: API decrypt")
        else:
            if rc != -1 or out.raw != bytes(n) + b"\x42":
                failures.append(f"{where}: FAIL vector gave rc={rc} (or out not wiped)")
            if v.tag_len == TAG:
                try:
                    a.decrypt(v.nonce, v.ciphertext + v.tag, v.aad)
                    failures.append(f"{where}: API decrypted a FAIL vector")
                except InvalidTag:
                    pass
    assert not failures, failures[:20]
