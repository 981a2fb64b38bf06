"""06_peers_roofline: throughput of every backend against its peers, each masked per backend to
the same CPU features (the system's OpenSSL, the OpenSSL 4 cryptography bundles, aws-lc from
the awscrt wheel, EVP_AEAD libraries given by path) and cryptography (timed through its Python
call); "vs best peer" names the fastest peer at each instruction-set level (see
vgkernels.report.peerset); and each backend's share of its CTR-only roofline (the ctr32
keystream rate)."""

from __future__ import annotations

import json
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

from .peerset import best_peers, peer_names, seal_times
from .session import Profile, empty_figure, fmt_bytes, fmt_ns, get_profile, plural

HEADLINE_SIZES = (16, 1024, 16384)
LABELS = {"seal": "vgkernels seal", "copy_ip": "vgkernels copy+ip (n+1)",
          "openssl": "OpenSSL (masked)", "openssl_copy": "OpenSSL copy+seal (n+1, masked)",
          "openssl4_seal": "OpenSSL 4.0.3 (cryptography's, native)",
          "openssl4_copy": "OpenSSL 4.0.3 copy+seal (cryptography's, native, n+1)",
          "cryptography_py": "cryptography AESGCM (incl. Python call)",
          "aead_seal": "{peer}", "aead_scatter": "{peer} seal_scatter (n+1)",
          "aead_copy": "{peer} copy+seal (n+1)", "aead_open": "{peer} open",
          "ctr32": "ctr32 (AES only)", "ghash": "ghash", "encrypt_blocks": "encrypt_blocks",
          }


def sizes(profile: str | Profile) -> list[int]:
    """Throughput sizes (16 B, 1 KiB and 16 KiB always among them: the headline)."""
    prof = get_profile(profile)
    return prof.pick(list(HEADLINE_SIZES),
                     [16, 64, 256, 1024, 4096, 16384, 65536],
                     [16, 32, 64, 128, 256, 272, 288, 512, 1024, 2048, 4096, 8192, 16384,
                      32768, 65536])


def roofline_sizes(profile: str | Profile) -> list[int]:
    """Sizes of the roofline sweep for a profile."""
    prof = get_profile(profile)
    return prof.pick([16384], [1024, 16384, 65536], [1024, 4096, 16384, 65536])


def tidy(df: pd.DataFrame) -> pd.DataFrame:
    """Best of the runs per backend, op and size, with ``gbps`` (bytes / ns) and a label."""
    if df.empty:
        return df
    t = df.assign(ns=df["min_ns"].astype(float))
    keys = ["backend", "impl", "op", "shape", "n", "bytes"]
    b = t.groupby(keys, observed=True, as_index=False)["ns"].min()
    b["gbps"] = b["bytes"].astype(float) / b["ns"]
    lab, names = labels(df), peer_names(df)
    b["series"] = [lab.get(op, op).format(peer=names.get(("aead_seal", impl), impl))
                   for op, impl in zip(b["op"], b["impl"], strict=True)]
    return b


def labels(df: pd.DataFrame) -> dict[str, str]:
    """LABELS with the peers' versions as measured: the system OpenSSL's (labelled "no VAES
    code" when it is a 3.0 or older) and the bundled one's."""
    names = peer_names(df)
    out = dict(LABELS)
    sys_name = names.get(("openssl", "openssl"), "OpenSSL")
    out["openssl"] = f"{sys_name} (masked)"
    out["openssl_copy"] = f"{sys_name} copy+seal (n+1, masked)"
    col = df.get("bundled_openssl_version")
    seen = col.dropna() if col is not None else ()
    if len(seen):
        ver = " ".join(str(seen.iloc[0]).split()[:2])  # "OpenSSL 4.0.3"
        out = {k: v.replace("OpenSSL 4.0.3", ver) for k, v in out.items()}
    return out


def peer_paths(df: pd.DataFrame) -> pd.DataFrame:
    """Per backend and peer: its version, the capability vector it ran with (read back from
    the library) and the GCM code that vector selects."""
    if df.empty:
        return pd.DataFrame()
    rows = []
    for be, g in df.groupby("backend", sort=False, observed=True):
        r = g.iloc[0]
        if pd.notna(r.get("openssl_version")):
            rows.append({"backend": be, "peer": r["openssl_version"],
                         "effective OPENSSL_ia32cap": r.get("ia32cap_effective"),
                         "GCM path": r.get("openssl_path")})
        if pd.notna(r.get("bundled_openssl_version")):
            rows.append({"backend": be, "peer": r["bundled_openssl_version"],
                         "effective OPENSSL_ia32cap": r.get("bundled_ia32cap_effective"),
                         "GCM path": r.get("bundled_openssl_path")})
        for text in g["aead_peers"].dropna().unique() if "aead_peers" in g else ():
            for name, info in json.loads(text).items():
                rows.append({"backend": be, "peer": f"{name}: {info.get('version')}",
                             "effective OPENSSL_ia32cap": info.get("ia32cap_effective"),
                             "GCM path": info.get("gcm_path")})
            break
    return pd.DataFrame(rows)


def throughput_table(df: pd.DataFrame) -> pd.DataFrame:
    """Wide: per backend and n, GB/s of each series."""
    b = tidy(df)
    if b.empty:
        return b
    w = b.pivot_table(index=["backend", "n"], columns="series", values="gbps", observed=True)
    w.columns.name = None
    return w.reset_index()


def compare_table(df: pd.DataFrame) -> pd.DataFrame:
    """Per backend and n: our seal (ns, with the median's 95% interval), the fastest peer at
    that instruction-set level (named) and its time over ours, then every peer's time over
    ours (one column each), our copy + seal of n + 1 bytes, and cryptography's Python call."""
    st = seal_times(df)
    if st.empty:
        return pd.DataFrame()
    b = tidy(df)
    rows = []
    for (be, n), g in st.groupby(["backend", "n"], sort=False, observed=True):
        ours = g[g["who"] == "ours"]
        if ours.empty:
            continue
        o = ours.iloc[0]
        peers = g[g["who"] != "ours"]
        row: dict[str, object] = {"backend": be, "n": int(n), "seal ns": float(o["ns"]),
                                  "seal median 95% ns": f"{o['lo']:.0f}..{o['hi']:.0f}",
                                  "seal GB/s": int(n) / float(o["ns"])}
        if len(peers):
            best = peers.loc[peers["ns"].idxmin()]
            row["best peer"] = best["who"]
            row["best peer / ours"] = float(best["ns"]) / float(o["ns"])
        for who, ns in zip(peers["who"], peers["ns"], strict=True):
            row[f"{who} / ours"] = float(ns) / float(o["ns"])
        row["copy+ip ns (n+1)"] = _at(b, be, "copy_ip", int(n))
        row["cryptography ns (Python call)"] = _at(b, be, "cryptography_py", int(n))
        rows.append(row)
    return pd.DataFrame(rows)


def roofline_table(df: pd.DataFrame) -> pd.DataFrame:
    """Per backend and size: GB/s of ctr32 (AES keystream alone: the roofline), ghash,
    encrypt_blocks and seal, and seal's and encrypt_blocks' share of the roofline."""
    b = tidy(df)
    if b.empty:
        return b
    w = b.pivot_table(index=["backend", "n"], columns="op", values="gbps", observed=True)
    w = w.reindex(columns=["ctr32", "ghash", "encrypt_blocks", "seal"])
    w.columns = [f"{c} GB/s" for c in w.columns]
    w = w.reset_index()
    w["seal share of ctr32"] = w["seal GB/s"] / w["ctr32 GB/s"]
    w["encrypt_blocks share of ctr32"] = w["encrypt_blocks GB/s"] / w["ctr32 GB/s"]
    return w


def plot_throughput(df: pd.DataFrame):
    """GB/s against bytes (log x) per backend: vgkernels against its masked OpenSSL (the
    system's, and the one cryptography bundles, called natively) and cryptography (whose time
    includes the Python call)."""
    b = tidy(df)
    if b.empty:
        return empty_figure("no throughput measured", "Throughput")
    ops = ("seal", "copy_ip", "openssl", "openssl_copy", "openssl4_seal", "aead_seal",
           "cryptography_py")
    b = b[b["op"].isin(ops)]
    order = list(dict.fromkeys(b["backend"]))
    hue_order = list(dict.fromkeys(b.sort_values("op", key=lambda c: c.map(ops.index))
                                   ["series"]))
    g = sns.relplot(data=b, x="bytes", y="gbps", hue="series", hue_order=hue_order,
                    col="backend", col_order=order, col_wrap=min(3, len(order)) or 1,
                    kind="line", marker="o", markersize=4, height=3.4, aspect=1.35,
                    facet_kws={"sharey": False})
    for ax in g.axes.flat:
        ax.set_xscale("log", base=2)
        ax.set_ylim(bottom=0)
    g.set_axis_labels("bytes", "GB/s (bytes / ns, best of k)")
    g.figure.suptitle("Throughput: each backend against its peers, masked to its features",
                      y=1.02)
    return g


def plot_all(df: pd.DataFrame):
    """Every backend's seal in one plot (solid), with its masked OpenSSL (dashed, same
    colour)."""
    b = tidy(df)
    if b.empty:
        return empty_figure("no throughput measured", "Throughput")
    fig, ax = plt.subplots(figsize=(8.5, 4.8))
    bes = list(dict.fromkeys(b["backend"]))
    pal = dict(zip(bes, sns.color_palette("tab10", len(bes)), strict=True))
    for be in bes:
        for op, ls in (("seal", "-"), ("openssl", "--")):
            t = b[(b["backend"] == be) & (b["op"] == op)].sort_values("bytes")
            if len(t):
                ax.plot(t["bytes"], t["gbps"], ls=ls, marker="o", ms=3, color=pal[be],
                        label=f"{be}" + (" (OpenSSL masked)" if op == "openssl" else ""))
    ax.set_xscale("log", base=2)
    ax.set_ylim(bottom=0)
    ax.set_xlabel("bytes")
    ax.set_ylabel("GB/s")
    ax.set_title("Seal throughput per backend (solid) and OpenSSL masked to it (dashed)")
    ax.legend(fontsize=8, ncol=2)
    fig.tight_layout()
    return fig


def plot_roofline(rt: pd.DataFrame):
    """Each backend's seal and encrypt_blocks as a share of its CTR-only rate."""
    if rt.empty:
        return empty_figure("no roofline measured", "Roofline")
    n = int(rt["n"].max())
    t = rt[rt["n"] == n].set_index("backend")
    fig, ax = plt.subplots(figsize=(8, 0.6 + 0.55 * len(t)))
    y = np.arange(len(t))
    ax.barh(y - 0.2, t["ctr32 GB/s"], height=0.38, color="0.75", label="ctr32 (roofline)")
    ax.barh(y + 0.2, t["seal GB/s"], height=0.38, color="#1b9e77", label="seal")
    for i, (share, v) in enumerate(zip(t["seal share of ctr32"], t["seal GB/s"], strict=True)):
        if np.isfinite(share):
            ax.text(v, i + 0.2, f" {share:.0%}", va="center", fontsize=9)
    ax.set_yticks(y, t.index)
    ax.set_xlabel(f"GB/s at {fmt_bytes(n)}")
    ax.set_title("Seal against its CTR-only roofline (ctr32 keystream)")
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    return fig


def _at(b: pd.DataFrame, be: str, op: str, n: int) -> float:
    v = b[(b["backend"] == be) & (b["op"] == op) & (b["n"] == n)]["ns"]
    return float(v.min()) if len(v) else float("nan")


def api_sizes(profile: str | Profile) -> list[int]:
    """Sizes of the API call-cost table (tiny: 16 B alone)."""
    return get_profile(profile).pick([16], [16, 1024, 16384], [16, 1024, 16384])


def headline(df: pd.DataFrame, rt: pd.DataFrame | None = None) -> dict[str, Any]:
    """Per backend: GB/s at 16 KiB, ns at 16 B and 1 KiB, the fastest peer at that level at
    1 KiB and 16 KiB (``best_peer_16k``, ``best_peer_ratio_16k``: its time over ours) and
    every peer's ratio (``peers_16k``), the roofline share."""
    b = tidy(df)
    out: dict[str, dict[str, Any]] = {}
    if b.empty:
        return {"backends": out}
    bp = best_peers(df)
    for be in dict.fromkeys(b["backend"]):
        s16k, s1k = _at(b, be, "seal", 16384), _at(b, be, "seal", 1024)
        h: dict[str, Any] = {"gbps_16k": 16384 / s16k, "ns_16": _at(b, be, "seal", 16),
                             "ns_1k": s1k, **bp.get(str(be), {})}
        if rt is not None and len(rt):
            r = rt[rt["backend"] == be].sort_values("n")
            if len(r):
                h["roofline_share"] = float(r["seal share of ctr32"].iloc[-1])
                h["roofline_size"] = int(r["n"].iloc[-1])
        out[str(be)] = {k: (None if isinstance(v, float) and not np.isfinite(v) else v)
                        for k, v in h.items()}
    return {"backends": out}


def recommendation(df: pd.DataFrame) -> str:
    """The backend to use for bulk data here: the fastest seal at the largest size."""
    b = tidy(df)
    if b.empty:
        return "none: nothing was measured."
    top = int(b["n"].max())
    seal = b[(b["op"] == "seal") & (b["n"] == top)]
    if seal.empty:
        return "none: no seal was measured."
    best = seal.loc[seal["gbps"].idxmax()]
    return (f"use `{best.backend}` for bulk data on this host ({best.gbps:.2f} GB/s at "
            f"{fmt_bytes(top)}, the fastest of {plural(seal['backend'].nunique(), 'backend')} "
            "measured).")


def _top_vs_peers(st: pd.DataFrame, be: str, top: int, s_top: float) -> tuple[str, float]:
    """(", R× the rate of the fastest peer ...; the others: ...", R) at the largest size;
    ("", nan) without a peer there."""
    at = st[(st["backend"] == be) & (st["n"] == top) & (st["who"] != "ours")]
    if not len(at) or not np.isfinite(s_top):
        return "", float("nan")
    best = at.loc[at["ns"].idxmin()]
    ratio = float(best["ns"]) / s_top
    txt = (f", {ratio:.2f}× the rate of the fastest peer masked to the same features, "
           f"{best['who']} ({top / float(best['ns']):.2f} GB/s)")
    others = at[at["who"] != best["who"]]
    if len(others):
        txt += "; the others: " + ", ".join(
            f"{w} {float(ns) / s_top:.2f}×" for w, ns in zip(others["who"], others["ns"],
                                                            strict=True))
    return txt, ratio


def _at_16_bytes(b: pd.DataFrame, st: pd.DataFrame, be: str) -> str:
    """"; at 16 B it takes ..." against the fastest peer there and cryptography's call."""
    s16 = _at(b, be, "seal", 16)
    if not np.isfinite(s16):
        return ""
    txt = f"; at 16 B it takes {fmt_ns(s16)}"
    at16 = st[(st["backend"] == be) & (st["n"] == 16) & (st["who"] != "ours")]
    if len(at16):
        bst = at16.loc[at16["ns"].idxmin()]
        txt += (f" against {fmt_ns(float(bst['ns']))} for the fastest peer there, "
                f"{bst['who']} ({float(bst['ns']) / s16:.2f}×)")
    c16 = _at(b, be, "cryptography_py", 16)
    if np.isfinite(c16):
        txt += f"; cryptography's AESGCM takes {fmt_ns(c16)} including its Python call"
    return txt


def _roofline_part(rt: pd.DataFrame, be: str) -> str:
    """"; at N seal reaches P% of its CTR-only roofline ..." at the largest size measured."""
    r = rt[rt["backend"] == be].sort_values("n") if len(rt) else rt
    if not len(r) or not np.isfinite(r["seal share of ctr32"].iloc[-1]):
        return ""
    q = r.iloc[-1]
    return (f"; at {fmt_bytes(int(q['n']))} seal reaches "
            f"{q['seal share of ctr32']:.0%} of its CTR-only roofline "
            f"({q['ctr32 GB/s']:.2f} GB/s of keystream), encrypt_blocks "
            f"{q['encrypt_blocks share of ctr32']:.0%}")


def conclusions(df: pd.DataFrame, rt: pd.DataFrame) -> list[str]:
    """Per backend: our rate at the largest size against the fastest peer masked to the same
    features (named; every peer's ratio after it), 16 B against the same, the roofline."""
    b = tidy(df)
    if b.empty:
        return ["Nothing was measured."]
    st = seal_times(df)
    top = int(b["n"].max())
    lines = []
    ahead = []
    for be in dict.fromkeys(b["backend"]):
        s_top = _at(b, be, "seal", top)
        vs_peers, ratio = _top_vs_peers(st, be, top, s_top)
        if ratio > 1:
            ahead.append(str(be))
        lines.append(f"**{be}**: at {fmt_bytes(top)} it seals at {top / s_top:.2f} GB/s"
                     + vs_peers + _at_16_bytes(b, st, be) + _roofline_part(rt, be) + ".")
    seal = b[(b["op"] == "seal") & (b["n"] == top)]
    if len(seal) > 1:
        best = seal.loc[seal["gbps"].idxmax()]
        lines.insert(0, f"Use `{best.backend}` where the CPU has it: fastest at "
                        f"{fmt_bytes(top)}, {best.gbps:.2f} GB/s.")
    if len(st[st["who"] != "ours"]):
        lines.append(f"At {fmt_bytes(top)}, {len(ahead)} of {b['backend'].nunique()} backends "
                     "are faster than every peer masked to their features"
                     + (f" ({', '.join(ahead)})" if ahead else "") + ".")
    return lines
