"""What a call through the Python API costs, next to `cryptography`'s AESGCM in the same
process: one-shot encrypt and decrypt, encrypt from two pieces (against cryptography encrypting
the text already joined), and a streaming update (against our own one-shot call).

These are Python-level cases in the native driver: batches timed with perf_counter_ns,
interleaved round-robin with the peer's so drift hits both alike, k samples each.  The
kernel's own time is in every figure; the difference at 16 bytes is the binding.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from typing import Any

import pandas as pd
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from .. import machine
from ..api import AesGcm
from .driver import Case, driver

SIZES = (16, 1024, 16384)
AAD = bytes(13)


def cases(sizes: Iterable[int] = SIZES, backend: str | None = None) -> list[Case]:
    """The cases for each size: (impl, op) pairs whose calls are compared per row."""
    key, nonce = os.urandom(16), os.urandom(12)
    ours, theirs = AesGcm(key, backend=backend), AESGCM(key)
    out: list[Case] = []

    def add(impl: str, op: str, n: int, fn: Callable[[], Any]) -> None:
        fn()  # warm, and fail here rather than in a timed batch
        out.append(Case({"impl": impl, "backend": ours.backend.name, "op": op, "bytes": n},
                        py_call=fn))

    for n in sizes:
        data = os.urandom(n)
        ct = theirs.encrypt(nonce, data, AAD)
        head, tail = data[:-1], data[-1:]
        enc = ours.encryptor(nonce, AAD)
        add("vgkernels", "encrypt", n, lambda d=data: ours.encrypt(nonce, d, AAD))
        add("cryptography", "encrypt", n, lambda d=data: theirs.encrypt(nonce, d, AAD))
        add("vgkernels", "decrypt", n, lambda c=ct: ours.decrypt(nonce, c, AAD))
        add("cryptography", "decrypt", n, lambda c=ct: theirs.decrypt(nonce, c, AAD))
        add("vgkernels", "encrypt two pieces", n,
            lambda p=[head, tail]: ours.encrypt(nonce, p, AAD))
        add("cryptography", "encrypt two pieces", n,  # the text already joined: no join cost
            lambda d=data: theirs.encrypt(nonce, d, AAD))
        add("vgkernels", "stream update", n, lambda d=data, e=enc: e.update(d))
        add("vgkernels", "one-shot (stream's reference)", n,
            lambda d=data: ours.encrypt(nonce, d, AAD))
    return out


def measure(sizes: Iterable[int] = SIZES, backend: str | None = None, k: int = 15,
            target_ns: float = 200_000.0) -> pd.DataFrame:
    """One row per case: min and median ns per call over k interleaved samples."""
    d = driver(pin=True)
    cs = cases(sizes, backend)
    timing = d.measure(cs, k=k, target_ns=target_ns, probes=False)
    rows = [{**m.label, **m.stats(d.tsc_hz), "k": len(m.ticks)} for m in timing.results]
    df = pd.DataFrame(rows)
    for col, val in machine.identity().items():
        df[col] = val
    return df


def table(df: pd.DataFrame) -> pd.DataFrame:
    """Per op and size: vgkernels, the reference (cryptography, or our one-shot for the stream)
    and their ratio (min of k, ns)."""
    rows = []
    for (op, n), g in df.groupby(["op", "bytes"], sort=False):
        if op == "one-shot (stream's reference)":
            continue
        ours = g[g["impl"] == "vgkernels"]["min_ns"].iloc[0]
        if op == "stream update":
            ref = df[(df["op"] == "one-shot (stream's reference)") & (df["bytes"] == n)]
            ref_name, limit = "vgkernels one-shot", 1.5
        else:
            ref = g[g["impl"] == "cryptography"]
            ref_name, limit = "cryptography", 1.0
        r = ref["min_ns"].iloc[0]
        rows.append({"op": op, "bytes": int(n), "vgkernels ns": ours, "reference": ref_name,
                     "reference ns": r, "ratio": ours / r, "target": f"<= {limit:g}x",
                     "holds": ours / r <= limit})
    return pd.DataFrame(rows)


def headline(df: pd.DataFrame, n: int = 16) -> dict[str, dict[str, float]]:
    """Per backend: our encrypt of ``n`` bytes through the API (ns) and cryptography's time
    over ours (above 1: we are cheaper), for the report's headline."""
    out: dict[str, dict[str, float]] = {}
    for be, g in df[(df["op"] == "encrypt") & (df["bytes"] == n)].groupby("backend"):
        ours = g[g["impl"] == "vgkernels"]["min_ns"]
        theirs = g[g["impl"] == "cryptography"]["min_ns"]
        if len(ours) and len(theirs):
            out[str(be)] = {f"api_ns_{n}": float(ours.iloc[0]),
                            f"api_crypto_ratio_{n}": float(theirs.iloc[0] / ours.iloc[0])}
    return out
