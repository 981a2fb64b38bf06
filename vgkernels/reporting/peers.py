"""06_peers_roofline: throughput of every backend against OpenSSL (masked per backend to the
same CPU features) and cryptography (timed through its Python call), and each backend's share
of its CTR-only roofline (the ctr32 keystream rate)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from .common import Profile, empty_figure, fmt_bytes, fmt_ns, get_profile, plural

HEADLINE_SIZES = (16, 1024, 16384)
LABELS = {"seal": "vgkernels seal", "copy_ip": "vgkernels copy+ip (n+1)",
          "openssl": "OpenSSL (masked)", "openssl_copy": "OpenSSL copy+seal (n+1, masked)",
          "openssl4_seal": "OpenSSL 4.0.3 (cryptography's, native)",
          "openssl4_copy": "OpenSSL 4.0.3 copy+seal (cryptography's, native, n+1)",
          "cryptography_py": "cryptography AESGCM (incl. Python call)",
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
    b["series"] = b["op"].map(labels(df)).fillna(b["op"])
    return b


def labels(df: pd.DataFrame) -> dict[str, str]:
    """LABELS with the bundled OpenSSL's version as measured (``bundled_openssl_version``)."""
    col = df.get("bundled_openssl_version")
    seen = col.dropna() if col is not None else ()
    if not len(seen):
        return LABELS
    ver = " ".join(str(seen.iloc[0]).split()[:2])  # "OpenSSL 4.0.3"
    return {k: v.replace("OpenSSL 4.0.3", ver) for k, v in LABELS.items()}


def throughput_table(df: pd.DataFrame) -> pd.DataFrame:
    """Wide: per backend and n, GB/s of each series."""
    b = tidy(df)
    if b.empty:
        return b
    w = b.pivot_table(index=["backend", "n"], columns="series", values="gbps", observed=True)
    w.columns.name = None
    return w.reset_index()


def compare_table(df: pd.DataFrame) -> pd.DataFrame:
    """Per backend and n: vgkernels seal and OpenSSL (ns), OpenSSL / ours, and cryptography."""
    b = tidy(df)
    if b.empty:
        return b
    w = b.pivot_table(index=["backend", "n"], columns="op", values="ns", observed=True)
    w = w.reindex(columns=["seal", "openssl", "openssl4_seal", "copy_ip", "openssl_copy",
                           "openssl4_copy", "cryptography_py"])
    w.columns.name = None
    w = w.reset_index()
    w["OpenSSL / ours"] = w["openssl"] / w["seal"]
    w["OpenSSL 4 native / ours"] = w["openssl4_seal"] / w["seal"]
    w["OpenSSL copy / ours copy"] = w["openssl_copy"] / w["copy_ip"]
    w["seal GB/s"] = w["n"] / w["seal"]
    return w.rename(columns={"seal": "seal ns", "openssl": "OpenSSL ns",
                             "openssl4_seal": "OpenSSL 4 native ns (cryptography's)",
                             "copy_ip": "copy+ip ns", "openssl_copy": "OpenSSL copy ns",
                             "openssl4_copy": "OpenSSL 4 native copy ns",
                             "cryptography_py": "cryptography ns (Python call)"})


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
    import seaborn as sns

    b = tidy(df)
    if b.empty:
        return empty_figure("no throughput measured", "Throughput")
    ops = ("seal", "copy_ip", "openssl", "openssl_copy", "openssl4_seal", "cryptography_py")
    b = b[b["op"].isin(ops)]
    order = list(dict.fromkeys(b["backend"]))
    lab = labels(df)
    hue_order = [lab[o] for o in ops if lab[o] in set(b["series"])]
    g = sns.relplot(data=b, x="bytes", y="gbps", hue="series", hue_order=hue_order,
                    col="backend", col_order=order, col_wrap=min(3, len(order)) or 1,
                    kind="line", marker="o", markersize=4, height=3.4, aspect=1.35,
                    facet_kws={"sharey": False})
    for ax in g.axes.flat:
        ax.set_xscale("log", base=2)
        ax.set_ylim(bottom=0)
    g.set_axis_labels("bytes", "GB/s (bytes / ns, best of k)")
    g.figure.suptitle("Throughput: each backend against OpenSSL masked to its features",
                      y=1.02)
    return g


def plot_all(df: pd.DataFrame):
    """Every backend's seal in one plot (solid), with its masked OpenSSL (dashed, same
    colour)."""
    import matplotlib.pyplot as plt
    import seaborn as sns

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
    import matplotlib.pyplot as plt

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


def headline(df: pd.DataFrame, rt: pd.DataFrame | None = None) -> dict[str, Any]:
    """Per backend: GB/s at 16 KiB, ns at 16 B and 1 KiB, OpenSSL's time over ours, roofline
    share."""
    b = tidy(df)
    out: dict[str, dict[str, Any]] = {}
    if b.empty:
        return {"backends": out}
    for be in dict.fromkeys(b["backend"]):
        s16k, o16k = _at(b, be, "seal", 16384), _at(b, be, "openssl", 16384)
        s1k, o1k = _at(b, be, "seal", 1024), _at(b, be, "openssl", 1024)
        h = {"gbps_16k": 16384 / s16k, "ns_16": _at(b, be, "seal", 16), "ns_1k": s1k,
             "openssl_ratio_16k": o16k / s16k, "openssl_ratio_1k": o1k / s1k}
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


def conclusions(df: pd.DataFrame, rt: pd.DataFrame) -> list[str]:
    """Per backend, computed statements about throughput, peers and the roofline."""
    b = tidy(df)
    lines = []
    if b.empty:
        return ["Nothing was measured."]
    top = int(b["n"].max())
    for be in dict.fromkeys(b["backend"]):
        s_top, o_top = _at(b, be, "seal", top), _at(b, be, "openssl", top)
        s16, o16 = _at(b, be, "seal", 16), _at(b, be, "openssl", 16)
        c16 = _at(b, be, "cryptography_py", 16)
        txt = f"**{be}**: at {fmt_bytes(top)} it seals at {top / s_top:.2f} GB/s"
        if np.isfinite(o_top):
            txt += (f", {o_top / s_top:.2f}× the rate of OpenSSL masked to the same features "
                    f"({top / o_top:.2f} GB/s)")
        if np.isfinite(s16):
            txt += f"; at 16 B it takes {fmt_ns(s16)}"
            if np.isfinite(o16):
                txt += f" against OpenSSL's {fmt_ns(o16)} ({o16 / s16:.2f}×)"
            if np.isfinite(c16):
                txt += f" and cryptography's {fmt_ns(c16)} including its Python call"
        if len(rt):
            r = rt[rt["backend"] == be].sort_values("n")
            if len(r) and np.isfinite(r["seal share of ctr32"].iloc[-1]):
                q = r.iloc[-1]
                txt += (f"; at {fmt_bytes(int(q['n']))} seal reaches "
                        f"{q['seal share of ctr32']:.0%} of its CTR-only roofline "
                        f"({q['ctr32 GB/s']:.2f} GB/s of keystream), encrypt_blocks "
                        f"{q['encrypt_blocks share of ctr32']:.0%}")
        lines.append(txt + ".")
    seal = b[(b["op"] == "seal") & (b["n"] == top)]
    if len(seal) > 1:
        best = seal.loc[seal["gbps"].idxmax()]
        lines.append(f"Fastest at {fmt_bytes(top)}: `{best.backend}` at {best.gbps:.2f} GB/s.")
    ossl = b[b["op"] == "openssl"]
    if len(ossl):
        beat = [be for be in dict.fromkeys(b["backend"])
                if _at(b, be, "openssl", top) > _at(b, be, "seal", top)]
        lines.append(f"At {fmt_bytes(top)}, {len(beat)} of {b['backend'].nunique()} backends "
                     f"are faster than OpenSSL masked to their features"
                     + (f" ({', '.join(beat)})" if beat else "") + ".")
    return lines
