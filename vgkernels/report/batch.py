"""The report batch: every notebook through papermill into one report directory, each
rendered to HTML, and an index.html with the headline numbers, figures and links.

``vgkernels report [--profile tiny|quick|full] [--out DIR] [--backends ...] [--only NB ...]``
"""

from __future__ import annotations

import argparse
import contextlib
import html
import json
import os
import platform
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import mistune
import pandas as pd
from tqdm.auto import tqdm

from .. import __version__, machine
from ..backends import BACKENDS, BY_NAME
from ..bench.aead import ENV_PEERS, parse_peers
from ..bench.meta import clocks
from . import notebooks as nbs
from .pages import make_offline, render
from .peerset import banners
from .session import (
    PROFILES,
    PROGRESS_ENV,
    choose_backends,
    default_out_dir,
    get_profile,
    jsonable,
    note_path,
    parse_backends,
    read_notes,
)

KERNEL_NAME = "vgkernels-python3"


# -- the kernel --------------------------------------------------------------------------------


@contextlib.contextmanager
def kernel() -> Iterator[str]:
    """A Jupyter kernelspec that runs this very interpreter (``sys.executable``), so the
    notebooks see the same vgkernels whether or not its environment is activated.  It lives
    in a temporary directory put first on ``JUPYTER_PATH`` while the context is open; yields
    its name (for papermill's ``kernel_name``)."""
    with tempfile.TemporaryDirectory(prefix="vgkernels-kernel-") as d:
        spec = Path(d) / "kernels" / KERNEL_NAME
        spec.mkdir(parents=True)
        (spec / "kernel.json").write_text(json.dumps({
            "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
            "display_name": f"Python {platform.python_version()} (vgkernels)",
            "language": "python",
            "metadata": {"debugger": False},
        }, indent=1))
        old = os.environ.get("JUPYTER_PATH")
        os.environ["JUPYTER_PATH"] = d + (os.pathsep + old if old else "")
        try:
            yield KERNEL_NAME
        finally:
            if old is None:
                os.environ.pop("JUPYTER_PATH", None)
            else:
                os.environ["JUPYTER_PATH"] = old


def kernel_manager_class() -> type:
    """The kernel manager papermill uses: the kernel talks over Unix sockets in Jupyter's
    private runtime directory (IPC) rather than unencrypted TCP on localhost."""
    # lazy, like papermill: +0.11 s on `vgkernels report -h`, `--list`, `--reindex`
    from jupyter_client.manager import AsyncKernelManager

    class IPCKernelManager(AsyncKernelManager):
        def __init__(self, *args: Any, **kwargs: Any):
            kwargs.setdefault("transport", "ipc")
            super().__init__(*args, **kwargs)

    return IPCKernelManager


# -- one notebook ------------------------------------------------------------------------------


@dataclass
class NotebookRun:
    """One notebook's run in a report batch: status, time, error, artefacts."""
    name: str
    status: str = "not run"  # ok | failed | not run | skipped (error says why)
    seconds: float = 0.0
    error: str | None = None
    ipynb: str | None = None
    html: str | None = None
    earlier: bool = False  # artefacts from an earlier run in the same directory
    parameters: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """True when the notebook ran without error."""
        return self.status == "ok"


def _error_text(exc: BaseException) -> str:
    ename, evalue = getattr(exc, "ename", None), getattr(exc, "evalue", None)
    if ename:
        cell = getattr(exc, "exec_count", None)
        where = f" (cell {cell})" if cell else ""
        return f"{ename}: {evalue}{where}"
    return f"{type(exc).__name__}: {exc}"


def execute(src: Path, out: Path, parameters: dict[str, Any], kernel_name: str,
            html_out: bool = True, timeout: float | None = None) -> NotebookRun:
    """Run one notebook with papermill into ``out`` (executed .ipynb and, with ``html_out``,
    its HTML); a failure is caught and reported in the result, never raised."""
    import papermill as pm  # lazy: +0.19 s on `vgkernels report -h`, `--list`, `--reindex`

    name = src.stem
    out.mkdir(parents=True, exist_ok=True)
    run = NotebookRun(name, parameters=dict(parameters))
    dest = out / f"{name}.ipynb"
    with contextlib.suppress(FileNotFoundError):
        note_path(out, name).unlink()  # no stale notes from an earlier run
    t0 = time.perf_counter()
    try:
        pm.execute_notebook(str(src), str(dest), parameters=parameters, kernel_name=kernel_name,
                            progress_bar=False, log_output=False, cwd=str(out),
                            execution_timeout=timeout,
                            kernel_manager_class=kernel_manager_class())
        run.status = "ok"
    except Exception as e:  # noqa: BLE001 - one notebook's failure must not stop the batch
        run.status, run.error = "failed", _error_text(e)
    run.seconds = time.perf_counter() - t0
    if dest.exists():
        run.ipynb = dest.name
        if html_out:
            try:
                run.html = render_html(dest).name
            except Exception as e:  # noqa: BLE001
                run.error = (run.error + "; " if run.error else "") + f"HTML: {_error_text(e)}"
    return run


def render_html(ipynb: Path) -> Path:
    """An executed notebook as standalone HTML next to it (offline: no CDN scripts)."""
    return render(ipynb)


class _Progress:
    """The batch's progress bar: which notebook runs, and (polled from the file the notebook
    writes, see vgkernels.report.session.report_progress) which sweep and how far."""

    def __init__(self, total: int, enabled: bool, path: Path):
        self.path = path
        self.bar = None
        if enabled:
            self.bar = tqdm(total=total, unit="notebook", file=sys.stderr, dynamic_ncols=True,
                            bar_format="{desc}  [{n_fmt}/{total_fmt} notebooks, {elapsed}]")
        self.name = ""
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._seen = None

    def start(self, name: str) -> None:
        if self.bar is None:
            return
        self.name = name
        self.bar.set_description_str(f"report: {name} (starting)")
        self._stop.clear()
        self._thread = threading.Thread(target=self._poll, daemon=True)
        self._thread.start()

    def _poll(self) -> None:
        while not self._stop.wait(0.5):
            try:
                st = json.loads(self.path.read_text())
            except (OSError, ValueError):
                continue
            key = (st.get("sweep"), st.get("done"), st.get("total"))
            if key != self._seen and self.bar is not None and st.get("notebook") == self.name:
                self._seen = key
                self.bar.set_description_str(f"report: {self.name} · sweep {st['sweep']} "
                                             f"{st['done']}/{st['total']} chunks")

    def done(self, run: NotebookRun) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        msg = f"{run.name}: {run.status} in {run.seconds:.1f} s" + \
              (f" ({run.error})" if run.error else "")
        if self.bar is not None:
            self.bar.set_description_str(f"report: {run.name} ({run.status})")
            self.bar.update(1)
            self.bar.write(msg, file=sys.stderr)
        else:
            print(msg, file=sys.stderr)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


# -- the headline ------------------------------------------------------------------------------


def _per_backend(notes: dict[str, dict[str, Any]], notebook: str) -> dict[str, dict[str, Any]]:
    return (notes.get(notebook, {}).get("headline", {}) or {}).get("backends", {}) or {}


def _thr(x: Any) -> str:
    if x is None or pd.isna(x):
        return "no crossover"
    return "0 (never copy)" if int(x) == 0 else f"{int(x)} B"


def _missing(x: Any) -> bool:
    return x is None or pd.isna(x)


def _headline_row(be: str, p: dict[str, Any], c: dict[str, Any] | None, b: dict[str, Any],
                  peer_cols: list[str]) -> dict[str, Any]:
    """One backend's numbers: ``p`` from 06 (peers), ``c`` from 04 (copy_below, None when it
    did not run for the backend), ``b`` from 02 (block counts)."""
    return {
        "backend": be,
        "GB/s @16 KiB": p.get("gbps_16k"),
        "ns @16 B": p.get("ns_16"),
        "ns @1 KiB": p.get("ns_1k"),
        "best peer @16 KiB": p.get("best_peer_16k"),
        "best peer / ours @16 KiB": p.get("best_peer_ratio_16k"),
        "best peer @1 KiB": p.get("best_peer_1k"),
        "best peer / ours @1 KiB": p.get("best_peer_ratio_1k"),
        **{f"{w} / ours @16 KiB": p.get("peers_16k", {}).get(w) for w in peer_cols},
        "copy_below aligned": None if c is None else c.get("aligned"),
        "copy_below unaligned": None if c is None else c.get("unaligned"),
        "_cb_known": c is not None,
        "split ns @384 B": b.get("split_384"),
        "full ns @384 B": b.get("full_384"),
        "split→full @384 B": b.get("change_384"),
        "API encrypt ns @16 B": p.get("api_ns_16"),
        "cryptography / API @16 B": p.get("api_crypto_ratio_16"),
    }


def _headline_text(df: pd.DataFrame, peer_cols: list[str]) -> pd.DataFrame:
    """The headline's numbers as the cells the index shows."""
    def num(x: Any, f: str) -> str:
        return "—" if _missing(x) else format(x, f)

    out = pd.DataFrame({"backend": df["backend"]})
    out["GB/s @16 KiB"] = [num(x, ".2f") for x in df["GB/s @16 KiB"]]
    out["ns @16 B"] = [num(x, ".1f") for x in df["ns @16 B"]]
    out["ns @1 KiB"] = [num(x, ".1f") for x in df["ns @1 KiB"]]
    for size in ("16 KiB", "1 KiB"):
        out[f"vs best peer @{size}"] = [
            "—" if _missing(x) else f"{x:.2f}× ({w})"
            for x, w in zip(df[f"best peer / ours @{size}"], df[f"best peer @{size}"],
                            strict=True)]
    for w in peer_cols:
        out[f"vs {w} @16 KiB"] = [num(x, ".2f") + ("" if _missing(x) else "×")
                                  for x in df[f"{w} / ours @16 KiB"]]
    out["copy_below (aligned, unaligned)"] = [
        f"{_thr(a)}, {_thr(u)}" if known else "—"
        for a, u, known in zip(df["copy_below aligned"], df["copy_below unaligned"],
                               df["_cb_known"], strict=True)]
    out["split→full @384 B"] = [
        "—" if _missing(ch) else f"{ch:+.1%} ({s:.0f} → {f:.0f} ns)"
        for ch, s, f in zip(df["split→full @384 B"], df["split ns @384 B"],
                            df["full ns @384 B"], strict=True)]
    out["API encrypt @16 B (cryptography's time / ours)"] = [
        "—" if _missing(ns) else f"{ns:.0f} ns ({r:.2f}×)"
        for ns, r in zip(df["API encrypt ns @16 B"], df["cryptography / API @16 B"],
                         strict=True)]
    return out


def headline_table(notes: dict[str, dict[str, Any]], text: bool = False) -> pd.DataFrame:
    """Per backend: seal GB/s at 16 KiB, ns at 16 B and 1 KiB, the fastest peer masked to
    the same features (named) and its time over ours at 16 KiB and 1 KiB, then each peer's
    time over ours at 16 KiB (vgkernels.report.peerset), the copy_below thresholds and the
    split -> full change at 384 B, from the notebooks' notes.  ``text``: formatted cells
    instead of numbers."""
    peers = _per_backend(notes, "06_peers_roofline")
    cb = _per_backend(notes, "04_copy_below")
    blocks = _per_backend(notes, "02_block_counts")
    order = [b.name for b in BACKENDS]
    names = sorted(set(peers) | set(cb) | set(blocks),
                   key=lambda n: order.index(n) if n in order else len(order))
    peer_cols = list(dict.fromkeys(w for p in peers.values() for w in p.get("peers_16k", {})))
    df = pd.DataFrame([_headline_row(be, peers.get(be, {}), cb.get(be), blocks.get(be, {}),
                                     peer_cols) for be in names])
    if not text or df.empty:
        return df.drop(columns="_cb_known", errors="ignore")
    return _headline_text(df, peer_cols)


# -- index.html --------------------------------------------------------------------------------

_CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:2rem auto;
max-width:1200px;padding:0 1rem;color:#1d2330;background:#fff}
h1{font-size:1.6rem;margin-bottom:.2rem}h2{font-size:1.25rem;margin-top:2rem;
border-bottom:2px solid #dfe3ea;padding-bottom:.2rem}
.meta{color:#55607a;font-size:.9rem}
table{border-collapse:collapse;margin:.6rem 0;font-size:.92rem}
th,td{border:1px solid #d5dae3;padding:.3rem .6rem;text-align:left;vertical-align:top}
th{background:#eef2f8}
td.num{text-align:right;font-variant-numeric:tabular-nums}
.ok{color:#1b7a35;font-weight:600}.failed{color:#b3261e;font-weight:700}
.notrun{color:#77808f}
.banner{background:#fdecea;border:1px solid #f5c2bd;padding:.6rem 1rem;border-radius:6px}
.figs{display:grid;grid-template-columns:repeat(auto-fill,minmax(520px,1fr));gap:1rem}
figure{margin:0;border:1px solid #e2e6ee;border-radius:6px;padding:.5rem;background:#fbfcfe}
figure img{width:100%;height:auto}figcaption{font-size:.85rem;color:#55607a}
.concl li{margin:.2rem 0}code{background:#f1f3f7;padding:0 .2rem;border-radius:3px}
.vg-scroll{overflow-x:auto;max-width:100%}
"""


def _md(text: str) -> str:
    try:
        out = mistune.html(text)
        return out.strip().removeprefix("<p>").removesuffix("</p>")
    except Exception:  # noqa: BLE001 - plain text is good enough
        return html.escape(text)


def _link(href: str | None, label: str, out: Path | None = None) -> str:
    """A link, or nothing when there is no target (or, with ``out``, no such file there)."""
    if not href or (out is not None and not (out / href).exists()):
        return ""
    return f'<a href="{html.escape(href)}">{html.escape(label)}</a>'


# Files a report keeps only where it was run (see .gitignore): named in the index, never
# linked, so that a committed or copied report has no dead links.
def _local_only(rel: str) -> bool:
    return rel.endswith(".ipynb") or rel.startswith("data/")


Notes = dict[str, dict[str, Any]]


def _page_head(meta: dict[str, Any]) -> list[str]:
    """The document head, title and the run's identity (machine, profile, time, versions)."""
    esc = html.escape
    return [
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>",
        f"<title>vgkernels report — {esc(meta.get('host', ''))}</title>",
        f"<style>{_CSS}</style></head><body>",
        f"<h1>vgkernels report — {esc(meta.get('host', ''))}, {esc(meta.get('date', ''))}</h1>",
        f"<p class='meta machine'>machine: {esc(meta.get('machine', '?'))}</p>",
        f"<p class='meta'>profile <b>{esc(meta['profile'])}</b> · backends "
        f"{esc(', '.join(meta.get('backends') or ['all usable']))} · "
        f"{meta.get('seconds', 0):.0f} s · vgkernels {esc(str(meta.get('version', '')))} · "
        f"python {esc(platform.python_version())}</p>",
    ]


def _page_banners(runs: Sequence[NotebookRun], notes: Notes, profile: str) -> list[str]:
    """The failed notebooks, then the smoke-test and noise banners (vgkernels.report.peerset)."""
    esc = html.escape
    failed = [r for r in runs if r.status == "failed"]
    parts = []
    if failed:
        parts.append("<p class='banner'><b>" + str(len(failed)) + " notebook(s) failed:</b> "
                     + "; ".join(f"{esc(r.name)} — {esc(r.error or '')}" for r in failed)
                     + "</p>")
    parts += [f"<p class='banner'>{esc(text)}</p>" for text in banners(notes, profile)]
    return parts


def _page_headline(notes: Notes) -> list[str]:
    """The headline table and what its columns mean."""
    parts = ["<h2 id='headline'>Headline</h2>"]
    ht = headline_table(notes, text=True)
    if ht.empty:
        parts.append("<p>No headline numbers: the notebooks that compute them (02, 04, 06) "
                     "did not run or failed.</p>")
        return parts
    parts.append("<div class='vg-scroll'>" + ht.to_html(index=False, border=0,
                 classes="headline", escape=True) + "</div>")
    parts.append(
        "<p class='meta'>GB/s and ns: vgkernels seal in place, best of k (06). "
        "vs best peer: the fastest peer's time over ours, every peer masked to the "
        "backend's features in the same run (above 1: we are faster), then each peer's. "
        "copy_below: below these total lengths copying the "
        "pieces and sealing in place beats the gather (04; 0: gather always as fast). "
        "split→full: in-place seal at 384 B, tail=split → tail=full (02). API encrypt: "
        "AesGcm.encrypt of 16 B as a Python call, and cryptography's AESGCM time over it in "
        "the same process (06; `vgkernels bench api`).</p>")
    return parts


def _page_notebooks(runs: Sequence[NotebookRun], notes: Notes, out: Path) -> list[str]:
    """One table row per notebook: status, time, its page, errors and sweep errors."""
    esc = html.escape
    parts = ["<h2 id='notebooks'>Notebooks</h2><table><tr><th>notebook</th><th>status</th>"
             "<th>time</th><th>links</th><th>notes</th></tr>"]
    for r in runs:
        cls = {"ok": "ok", "failed": "failed"}.get(r.status, "notrun")
        status = r.status + (" (earlier run)" if r.earlier else "")
        n = notes.get(r.name, {})
        sweep_notes = [f"{s['label']}: {m}" for s in n.get("sweeps", [])
                       for m in s.get("errors", [])]
        extra = (esc(r.error) if r.error else "") + "".join(
            f"<br><span class='failed'>sweep error</span> {esc(m)}" for m in sweep_notes)
        links = _link(r.html, "HTML", out)
        parts.append(f"<tr><td>{esc(r.name)}</td><td class='{cls}'>{esc(status)}</td>"
                     f"<td class='num'>{r.seconds:.1f} s</td><td>{links}</td><td>{extra}</td>"
                     "</tr>")
    parts.append("</table>")
    return parts


def _page_figures(notes: Notes, out: Path) -> list[str]:
    """The figures the notebooks marked as headline ones (those whose file is there)."""
    esc = html.escape
    figs = [(name, f) for name, n in notes.items() for f in n.get("figures", [])
            if f.get("headline") and (out / f["path"]).exists()]
    if not figs:
        return []
    parts = ["<h2 id='figures'>Figures</h2><div class='figs'>"]
    for name, f in figs:
        parts.append(f"<figure><a href='{esc(f['path'])}'><img src='{esc(f['path'])}' "
                     f"alt='{esc(f['title'])}'></a><figcaption>{esc(name)}: "
                     f"{esc(f['title'])}<br><small>{esc(f.get('machine', ''))}</small>"
                     "</figcaption></figure>")
    parts.append("</div>")
    return parts


def _page_conclusions(notes: Notes) -> list[str]:
    """Each notebook's computed conclusions (Markdown)."""
    parts = ["<h2 id='conclusions'>Conclusions</h2>"]
    for name, n in notes.items():
        if n.get("conclusions"):
            parts.append(f"<h3>{html.escape(name)}</h3><ul class='concl'>"
                         + "".join(f"<li>{_md(c)}</li>" for c in n["conclusions"]) + "</ul>")
    return parts


def _page_files(runs: Sequence[NotebookRun], notes: Notes, out: Path) -> list[str]:
    """Links to the derived files, tables and figures; the local-only files named, unlinked."""
    esc = html.escape
    parts = ["<h2 id='files'>Files</h2><ul>"]
    if (out / "copy_below.json").exists():
        parts.append(f"<li>{_link('copy_below.json', 'copy_below.json', out)} (derived "
                     "thresholds)</li>")
    local: list[str] = [f"{r.name}.ipynb" for r in runs if r.ipynb]
    for name, n in notes.items():
        files = [*n.get("files", []), *n.get("tables", [])] + [
            f for s in n.get("sweeps", []) for f in s.get("files", [])]
        files = [f for f in dict.fromkeys(files) if f != "copy_below.json"]
        local += [f for f in files if _local_only(f)]
        links = [x for x in (_link(f, Path(f).name, out) for f in files if not _local_only(f))
                 if x]
        if links:
            parts.append(f"<li>{esc(name)}: " + ", ".join(links) + "</li>")
    fig_links = [x for x in (_link(f["path"], Path(f["path"]).name, out)
                             for n in notes.values() for f in n.get("figures", [])) if x]
    if fig_links:
        parts.append("<li>figures: " + ", ".join(fig_links) + "</li>")
    parts.append("</ul>")
    if local:
        parts.append("<p class='meta'>Kept only where the report was run (not committed, so "
                     "not linked): the executed notebooks and the raw sweep data, "
                     + ", ".join(f"<code>{esc(f)}</code>" for f in dict.fromkeys(local))
                     + ".</p>")
    return parts


def write_index(out: Path, runs: Sequence[NotebookRun], meta: dict[str, Any]) -> Path:
    """index.html (and index.json) of a report directory."""
    notes = read_notes(out)
    profile = str(meta.get("profile"))
    parts = [*_page_head(meta), *_page_banners(runs, notes, profile), *_page_headline(notes),
             *_page_notebooks(runs, notes, out), *_page_figures(notes, out),
             *_page_conclusions(notes), *_page_files(runs, notes, out), "</body></html>"]
    path = out / "index.html"
    path.write_text("\n".join(parts), encoding="utf-8")
    (out / "index.json").write_text(json.dumps(jsonable({
        **meta, "notebooks": [asdict(r) for r in runs],
        "smoke_test": meta.get("profile") == "tiny",
        "banners": banners(notes, profile),
        "headline": headline_table(notes).to_dict(orient="records")}), indent=2) + "\n")
    return path


# -- the command -------------------------------------------------------------------------------


def _value(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return {"none": None, "true": True, "false": False}.get(text.lower(), text)


def parser() -> argparse.ArgumentParser:
    """The argument parser of ``vgkernels report``."""
    p = argparse.ArgumentParser(
        prog="vgkernels report",
        description="Run the report notebooks (papermill) into one directory: executed "
                    "notebooks, HTML, figures, data, derived thresholds and an index.html.")
    p.add_argument("--profile", choices=PROFILES, default="quick",
                   help="tiny: seconds per notebook; quick (default): about 35 minutes on "
                        "two cores with a cold kernel cache; full: the real analysis")
    p.add_argument("--out", help="report directory (default reports/<date>-<host>-<llvm cpu>/, "
                                 "with -2, -3, ... when it exists)")
    p.add_argument("--backends", nargs="+", metavar="NAME",
                   help="backends to measure (default: every usable one; tiny: the best)")
    p.add_argument("--only", nargs="+", metavar="NB",
                   help="run only these notebooks (02, 02_block_counts or block_counts)")
    p.add_argument("-p", "--param", action="append", default=[], metavar="NAME=VALUE",
                   help="extra notebook parameter (JSON value), e.g. -p install=true")
    p.add_argument("--peer", action="append", default=[], metavar="NAME=PATH",
                   help="an EVP_AEAD library (BoringSSL or aws-lc libcrypto.so) timed beside "
                        "OpenSSL and aws-lc in every peer sweep; repeatable")
    p.add_argument("--timeout", type=float, help="seconds a single cell may take")
    p.add_argument("--no-html", action="store_true", help="skip the HTML renderings")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--notebooks", help=f"notebook directory (default: the checkout's; "
                                       f"${nbs.NOTEBOOKS_ENV})")
    p.add_argument("--list", action="store_true", help="list the notebooks and exit")
    p.add_argument("--reindex", metavar="DIR",
                   help="rewrite DIR/index.html from its index.json and notes (no runs) and "
                        "make its pages work offline, then exit")
    p.add_argument("--sync-notebooks", action="store_true",
                   help="regenerate notebooks/NN_*.ipynb from the NN_*.py scripts and exit")
    return p


def reindex(out: Path) -> Path:
    """Rewrite a report directory's index.html from its index.json and notes (no notebook
    runs), and make its HTML pages work offline: re-rendered from the executed notebook when
    it is there, else with their remote scripts removed."""
    idx = json.loads((out / "index.json").read_text())
    fields = set(NotebookRun.__dataclass_fields__)
    runs = [NotebookRun(**{k: v for k, v in r.items() if k in fields})
            for r in idx.get("notebooks", [])]
    for r in runs:
        ipynb, page = out / f"{r.name}.ipynb", out / f"{r.name}.html"
        if ipynb.exists():
            render(ipynb, page)
        elif page.exists():
            page.write_text(make_offline(page.read_text(encoding="utf-8")), encoding="utf-8")
        r.html = page.name if page.exists() else None  # (r.ipynb: as recorded, never linked)
    meta = {k: v for k, v in idx.items() if k not in ("notebooks", "headline")}
    return write_index(out, runs, meta)


def _earlier_runs(out: Path) -> dict[str, dict[str, Any]]:
    """Notebook results recorded by an earlier batch in the same directory (index.json)."""
    try:
        idx = json.loads((out / "index.json").read_text())
        return {r["name"]: r for r in idx.get("notebooks", [])}
    except (OSError, ValueError, KeyError, TypeError):
        return {}


def _meta(profile: str, backends: list[str] | None) -> dict[str, Any]:
    ident = {**machine.identity(), **clocks()}
    return {**ident, "machine": machine.caption(ident),
            "date": datetime.now().strftime("%Y-%m-%d %H:%M"),
            "profile": profile, "backends": choose_backends(backends, profile),
            "requested_backends": backends, "version": __version__,
            "python": platform.python_version(), "argv": sys.argv}


class _Refused(Exception):
    """A request ``vgkernels report`` cannot run: one line on stderr, exit status 2."""


def _chosen(args: argparse.Namespace, paths: list[Path], directory: Path) -> list[Path]:
    """The notebooks ``--only`` names (every one without it), warning when a .ipynb is out of
    step with its .py script."""
    chosen = nbs.select(paths, args.only)
    if not chosen:
        raise _Refused(f"no notebook matches {args.only}; known: "
                       f"{', '.join(p.stem for p in paths)}")
    stale = nbs.sync(directory, check=True)
    if stale:
        print("vgkernels report: warning: out of step with their .py scripts (run "
              f"`vgkernels report --sync-notebooks`): {', '.join(p.name for p in stale)}",
              file=sys.stderr)
    return chosen


def _export_peers(peer: list[str]) -> None:
    """``--peer NAME=PATH`` for the notebooks' sweeps, through the environment they inherit
    (vgkernels.bench.sweep.default_aead_peers reads it)."""
    if not peer:
        return
    try:
        given = parse_peers(peer)
    except ValueError as e:
        raise _Refused(str(e)) from None
    os.environ[ENV_PEERS] = ",".join(f"{k}={v}" for k, v in given.items())


def _backends(names: list[str] | None) -> list[str] | None:
    """``--backends`` checked against the table (None: the notebooks choose)."""
    backends = parse_backends(",".join(names)) if names else None
    unknown = [b for b in backends or [] if b not in BY_NAME]
    if unknown:
        raise _Refused(f"unknown backend(s) {', '.join(unknown)}; known: {', '.join(BY_NAME)}")
    return backends


def _extra_params(items: list[str]) -> dict[str, Any]:
    """``-p NAME=VALUE`` notebook parameters (JSON values, else text)."""
    extra: dict[str, Any] = {}
    for item in items:
        name, eq, val = item.partition("=")
        if not eq or not name.isidentifier():
            raise _Refused(f"bad parameter {item!r} (NAME=VALUE)")
        extra[name] = _value(val)
    return extra


def _not_chosen(paths: list[Path], chosen: list[Path], out: Path) -> dict[str, NotebookRun]:
    """The notebooks not run this time, with an earlier run's status and artefacts when
    ``out`` has them."""
    runs: dict[str, NotebookRun] = {}
    before = _earlier_runs(out)
    for p in paths:
        if p in chosen:
            continue
        r = NotebookRun(p.stem)
        if (out / f"{p.stem}.ipynb").exists():
            old_run = before.get(p.stem, {})
            r.status = old_run.get("status", "not run")
            r.seconds = float(old_run.get("seconds") or 0.0)
            r.error = old_run.get("error")
            r.earlier, r.ipynb = True, f"{p.stem}.ipynb"
            r.html = f"{p.stem}.html" if (out / f"{p.stem}.html").exists() else None
        runs[p.stem] = r
    return runs


def _run_all(chosen: list[Path], out: Path, params: dict[str, Any],
             args: argparse.Namespace) -> dict[str, NotebookRun]:
    """Run the chosen notebooks in order in one kernelspec, the progress bar polling the
    file each one's sweeps write (its path in PROGRESS_ENV while they run)."""
    runs: dict[str, NotebookRun] = {}
    with tempfile.TemporaryDirectory(prefix="vgkernels-report-") as tmp, kernel() as kname:
        progress_file = Path(tmp) / "progress.json"
        old = os.environ.get(PROGRESS_ENV)
        os.environ[PROGRESS_ENV] = str(progress_file)
        bar = _Progress(len(chosen), not args.no_progress, progress_file)
        try:
            for p in chosen:
                bar.start(p.stem)
                why = nbs.skip_reason(p.stem)
                runs[p.stem] = (NotebookRun(p.stem, status="skipped", error=why) if why else
                                execute(p, out, params, kname, not args.no_html, args.timeout))
                bar.done(runs[p.stem])
        finally:
            bar.close()
            if old is None:
                os.environ.pop(PROGRESS_ENV, None)
            else:
                os.environ[PROGRESS_ENV] = old
    return runs


def _summary(out: Path, ordered: list[NotebookRun], meta: dict[str, Any], n_chosen: int) -> int:
    """Write the index, print where it is, the headline and the failures; the exit status."""
    index = write_index(out, ordered, meta)
    ht = headline_table(read_notes(out), text=True)
    print(f"\nreport: {index}")
    if not ht.empty:
        print(ht.to_string(index=False))
    bad = [r for r in ordered if r.status == "failed"]
    for r in bad:
        print(f"FAILED: {r.name}: {r.error}", file=sys.stderr)
    print(f"{n_chosen - len(bad)} of {n_chosen} notebooks ok in {meta['seconds']:.0f} s",
          file=sys.stderr)
    return 1 if bad else 0


def _report(args: argparse.Namespace) -> int:
    """The batch itself: check the request, run the chosen notebooks, write the index."""
    try:
        directory = nbs.notebooks_dir(args.notebooks)
    except FileNotFoundError as e:
        raise _Refused(str(e)) from None
    if args.sync_notebooks:
        for p in nbs.sync(directory):
            print(f"wrote {p}")
        return 0
    paths = nbs.discover(directory)
    if args.list:
        for p in paths:
            print(p.stem)
        return 0
    chosen = _chosen(args, paths, directory)
    get_profile(args.profile)
    _export_peers(args.peer)
    backends = _backends(args.backends)
    extra = _extra_params(args.param)
    out = (Path(args.out) if args.out else default_out_dir()).resolve()
    out.mkdir(parents=True, exist_ok=True)
    meta = _meta(args.profile, backends)
    params = {"profile": args.profile, "out_dir": str(out), "data_dir": str(out / "data"),
              "backends": backends, **extra}
    print(f"vgkernels report: profile {args.profile}, {len(chosen)} notebook(s) -> {out}",
          file=sys.stderr)
    t0 = time.perf_counter()
    runs = _not_chosen(paths, chosen, out)
    runs.update(_run_all(chosen, out, params, args))
    meta["seconds"] = time.perf_counter() - t0
    return _summary(out, [runs[p.stem] for p in paths], meta, len(chosen))


def main(argv: Sequence[str] | None = None) -> int:
    """``vgkernels report`` (argv without the program name); returns the exit status."""
    args = parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    if args.reindex:
        print(reindex(Path(args.reindex).resolve()))
        return 0
    try:
        return _report(args)
    except _Refused as e:
        print(f"vgkernels report: {e}", file=sys.stderr)
        return 2
