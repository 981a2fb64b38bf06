"""A quick self-check of every usable backend against the reference model and `cryptography`,
plus a few NIST and Wycheproof vectors: what `vgkernels info` runs."""

from __future__ import annotations

import os
import random
from dataclasses import dataclass

from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from . import spec
from .api import AesGcm, InvalidTag
from .backends import Backend, usable
from .spec import vectors


@dataclass
class CheckResult:
    """The self-check of one backend: how many cases, which failed, how it was built."""
    backend: str
    cases: int
    failures: list[str]
    compile_seconds: float
    from_cache: bool

    @property
    def ok(self) -> bool:
        """True when no case failed."""
        return not self.failures


def check_backend(be: Backend, cases: int = 60, seed: int = 1) -> CheckResult:
    """Random cases of every length class against the reference model and cryptography, plus
    Wycheproof's vectors, for one backend."""
    rng = random.Random(seed)
    failures: list[str] = []
    lib = None
    for i in range(cases):
        key = os.urandom(rng.choice((16, 24, 32)))
        nonce = os.urandom(rng.choice((12, 12, 12, 8, 16, 60)))
        n = rng.choice((0, 1, 15, 16, 17, 255, 256, 1024, 1025, rng.randrange(0, 5000)))
        pt, aad = os.urandom(n), os.urandom(rng.randrange(0, 40))
        a = AesGcm(key, backend=be.name)
        lib = a._k.library
        got = a.encrypt(nonce, pt, aad)
        ct, tag = spec.seal(key, nonce, pt, aad)
        if got != ct + tag:
            failures.append(f"case {i}: encrypt != reference model (n={n})")
        if got != AESGCM(key).encrypt(nonce, pt, aad):
            failures.append(f"case {i}: encrypt != cryptography (n={n})")
        if a.decrypt(nonce, got, aad) != pt:
            failures.append(f"case {i}: decrypt did not invert encrypt (n={n})")
        bad = bytearray(got)
        bad[rng.randrange(len(bad))] ^= 1 << rng.randrange(8)
        try:
            a.decrypt(nonce, bytes(bad), aad)
            failures.append(f"case {i}: a flipped bit was accepted (n={n})")
        except InvalidTag:
            pass
    try:
        for v in vectors.wycheproof_gcm()[:: 7]:
            if not v.nonce:
                continue
            a = AesGcm(v.key, backend=be.name)
            if v.valid and len(v.tag) == 16:
                if a.encrypt(v.nonce, v.plaintext, v.aad) != v.ciphertext + v.tag:
                    failures.append(f"wycheproof {v.ident}")
    except FileNotFoundError:
        pass  # the test extra is not installed: the random checks above still ran
    return CheckResult(be.name, cases, failures, lib.compile_seconds if lib else 0.0,
                       bool(lib and lib.from_cache))


def run(cases: int = 60) -> list[CheckResult]:
    """The self-check of every usable backend."""
    return [check_backend(be, cases) for be in usable()]
