"""Who the peers are and which is fastest: the honest headline's numbers.

Every peer timed in a run is one seal in place, under the same per-backend capability mask as
ours: the system's OpenSSL (Debian's 3.0, which has no VAES code: under the VAES masks it
takes its AES-NI + AVX path), the OpenSSL the ``cryptography`` wheel bundles (4.0: AVX-512
VAES GCM), aws-lc from the ``awscrt`` wheel and any EVP_AEAD library given by path.  "vs best
peer" at a size = the fastest of those peers at that backend's instruction-set level in the
same run, divided by our time, and named.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pandas as pd

from ..bench.driver import NOISY_SPREAD

SEAL_PEER_OPS = ("openssl", "openssl4_seal", "aead_seal")  # one seal in place per peer
HEADLINE_PEER_SIZES = (1024, 16384)
SMOKE_TEST = "smoke test, not for conclusions"  # what a tiny-profile report is


def _first(df: pd.DataFrame, col: str) -> str | None:
    s = df[col].dropna() if col in df else pd.Series(dtype=object)
    return str(s.iloc[0]) if len(s) else None


def _short(version: str) -> str:
    """'OpenSSL 3.0.19 1 Jul 2025' -> 'OpenSSL 3.0.19'; 'AWS-LC 5.12.0' stays."""
    return " ".join(version.split()[:2])


def peer_names(df: pd.DataFrame) -> dict[tuple[str, str], str]:
    """(op, impl) -> the peer's display name, from the versions the run recorded.  OpenSSL
    before 3.1 is labelled as having no VAES code (true of Debian's 3.0 builds: its GCM is
    AES-NI + AVX at best)."""
    names: dict[tuple[str, str], str] = {}
    sys_v = _first(df, "openssl_version")
    if sys_v:
        label = f"{_short(sys_v)} (system)"
        if sys_v.startswith(("OpenSSL 1.", "OpenSSL 3.0")):
            label = f"{_short(sys_v)} (system, no VAES code)"
        names["openssl", "openssl"] = label
    else:
        names["openssl", "openssl"] = "system OpenSSL"
    o4 = _first(df, "bundled_openssl_version")
    names["openssl4_seal", "openssl_bundled"] = (f"{_short(o4)} (cryptography's)" if o4
                                                 else "cryptography's OpenSSL")
    aead: dict[str, Any] = {}
    if "aead_peers" in df:
        for text in df["aead_peers"].dropna().unique():
            try:
                aead.update(json.loads(text))
            except (TypeError, ValueError):
                continue
    impls = df.loc[df["op"] == "aead_seal", "impl"].dropna().unique() if "op" in df else []
    for impl in impls:
        v = (aead.get(impl) or {}).get("version")
        names["aead_seal", impl] = f"{impl} ({v})" if v and impl.lower() not in v.lower() \
            else (v or impl)
    return names


def seal_times(df: pd.DataFrame) -> pd.DataFrame:
    """Per backend, size and implementation of a seal in place: best ``min_ns`` of the runs,
    the median's interval (lowest lo, highest hi) and the display name (``who``: ``ours`` or
    the peer)."""
    if df.empty:
        return pd.DataFrame(columns=["backend", "n", "who", "op", "ns", "lo", "hi"])
    names = peer_names(df)
    t = df[df["op"].isin(("seal", *SEAL_PEER_OPS)) & (df["shape"] == "one")].copy()
    t["who"] = [("ours" if op == "seal" else names.get((op, impl), impl))
                for op, impl in zip(t["op"], t["impl"], strict=True)]
    for c in ("median_lo_ns", "median_hi_ns"):
        if c not in t:
            t[c] = np.nan
    g = t.groupby(["backend", "n", "who", "op"], observed=True, as_index=False).agg(
        ns=("min_ns", "min"), lo=("median_lo_ns", "min"), hi=("median_hi_ns", "max"))
    return g


def best_peers(df: pd.DataFrame, sizes: tuple[int, ...] = HEADLINE_PEER_SIZES
               ) -> dict[str, dict[str, Any]]:
    """Per backend: ``ns_<n>`` ours, ``best_peer_<n>`` (name), ``best_peer_ratio_<n>`` (its
    time over ours: above 1 we are faster) and ``peers_<n>`` {name: time over ours}."""
    st = seal_times(df)
    out: dict[str, dict[str, Any]] = {}
    for be in dict.fromkeys(st["backend"]):
        h: dict[str, Any] = {}
        for n in sizes:
            at = st[(st["backend"] == be) & (st["n"] == n)]
            ours = at[at["who"] == "ours"]["ns"]
            peers = at[at["who"] != "ours"]
            if ours.empty or peers.empty:
                continue
            o = float(ours.min())
            best = peers.loc[peers["ns"].idxmin()]
            key = f"{n // 1024}k" if n % 1024 == 0 else str(n)
            h[f"best_peer_{key}"] = str(best["who"])
            h[f"best_peer_ratio_{key}"] = float(best["ns"]) / o
            h[f"peers_{key}"] = {str(w): float(v) / o for w, v in zip(peers["who"], peers["ns"],
                                                                      strict=True)}
        if h:
            out[str(be)] = h
    return out


def noise_summary(df: pd.DataFrame) -> dict[str, Any]:
    """How noisy a sweep's rows were: cases, noisy cases (spread above the driver's
    threshold), the worst spread and where."""
    if df.empty or "spread" not in df:
        return {"cases": 0, "noisy": 0, "worst_spread": None, "worst": None,
                "threshold": NOISY_SPREAD}
    sp = df["spread"].astype(float)
    i = sp.idxmax()
    w = df.loc[i]
    return {"cases": int(len(df)), "noisy": int((sp > NOISY_SPREAD).sum()),
            "worst_spread": float(sp.max()), "threshold": NOISY_SPREAD,
            "worst": f"{w['impl']} {w['backend']} {w['op']} {w['pieces']}"}


def banners(notes: dict[str, dict[str, Any]], profile: str) -> list[str]:
    """Warnings the report shows above everything: a tiny profile is a smoke test; sweeps
    with noisy cases (spread above the threshold) say how many and the worst."""
    out = []
    if profile == "tiny":
        out.append(f"Profile tiny: {SMOKE_TEST} (k = 3, few sizes; thresholds, fits and "
                   "ratios are not meaningful).")
    cases = noisy = 0
    worst: tuple[float, str] | None = None
    for name, n in notes.items():
        for s in n.get("sweeps", []):
            z = s.get("noise") or {}
            cases += z.get("cases", 0)
            noisy += z.get("noisy", 0)
            if z.get("worst_spread") is not None and (worst is None or
                                                      z["worst_spread"] > worst[0]):
                worst = (z["worst_spread"], f"{name} / {s.get('label')}: {z.get('worst')}")
    if noisy:
        out.append(f"Noise: {noisy} of {cases} timed cases have a spread (relative IQR of "
                   f"their samples) above {NOISY_SPREAD:.0%}; worst {worst[0]:.2f} "
                   f"({worst[1]}). The machine was busy: read medians with their intervals.")
    return out
