"""A report's pages as files that read well offline: executed notebooks rendered to HTML with
nothing fetched from a CDN, and the CSS that makes wide tables scroll instead of clipping.

nbconvert's ``lab`` template loads require.js and MathJax from cdnjs (and mermaid on demand);
on a machine without network the page then waits on them or renders math as source.  The
notebooks use neither widgets nor LaTeX, so the offline template drops those scripts; all the
page needs (CSS, figures as data URIs) is inlined by nbconvert already.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from urllib.parse import unquote

# Wide DataFrames scroll inside their output box; cells wrap instead of being cut off.
TABLE_CSS = """
.jp-OutputArea-output, .jp-RenderedHTMLCommon { overflow-x: auto; max-width: 100%; }
.vg-scroll { overflow-x: auto; max-width: 100%; }
.jp-RenderedHTMLCommon table { table-layout: auto; }
.jp-RenderedHTMLCommon td, .jp-RenderedHTMLCommon th {
  max-width: 32em; white-space: normal; overflow: visible; text-overflow: clip;
  font-variant-numeric: tabular-nums; }
.vg-banner { background: #fff4e5; border: 1px solid #f0b35a; border-radius: 6px;
  padding: .5rem 1rem; font-weight: 600; }
"""

_TEMPLATE = """{%- extends 'lab/index.html.j2' -%}
{%- block html_head_js -%}{%- endblock html_head_js -%}
{%- block jupyter_widgets -%}{%- endblock jupyter_widgets -%}
{%- block html_head_js_mathjax -%}{%- endblock html_head_js_mathjax -%}
{%- block html_head_js_mermaidjs -%}{%- endblock html_head_js_mermaidjs -%}
{%- block extra_css -%}<style type="text/css">""" + TABLE_CSS + """</style>
{%- endblock extra_css -%}
"""
_TEMPLATE_FILE = "vgkernels_offline.html.j2"

# <script src="http(s)://..."></script> (what an online template leaves behind)
_REMOTE_SCRIPT = re.compile(
    r"<script\b[^>]*\bsrc=[\"']https?://[^\"']*[\"'][^>]*>\s*</script>\s*", re.I)
_REMOTE_REF = re.compile(r"""<(?:script|link|img|iframe)\b[^>]*\b(?:src|href)=["']https?://""",
                         re.I)


def exporter():
    """An nbconvert HTMLExporter whose pages load nothing from the network."""
    # lazy: nbconvert adds 0.33 s to every `vgkernels report` command, rendering or not
    from jinja2 import DictLoader
    from nbconvert import HTMLExporter

    return HTMLExporter(template_name="lab", template_file=_TEMPLATE_FILE,
                        extra_loaders=[DictLoader({_TEMPLATE_FILE: _TEMPLATE})])


def render(ipynb: Path, dest: Path | None = None) -> Path:
    """An executed notebook as a standalone, offline HTML page (default: next to it)."""
    body, _ = exporter().from_filename(str(ipynb))
    path = dest or Path(ipynb).with_suffix(".html")
    path.write_text(body, encoding="utf-8")
    return path


def remote_refs(text: str) -> list[str]:
    """The tags of an HTML page that would fetch something from the network."""
    return [m.group(0) for m in _REMOTE_REF.finditer(text)]


def make_offline(text: str) -> str:
    """An already rendered page (from an online template) made to work offline: remote
    scripts removed, the table CSS added.  For pages whose executed notebook is gone."""
    text = _REMOTE_SCRIPT.sub("", text)
    if ".vg-scroll" not in text:
        text = text.replace("</head>", f"<style type=\"text/css\">{TABLE_CSS}</style>\n</head>",
                            1)
    return text


def local_links(text: str) -> list[str]:
    """The local targets (href/src that are neither absolute URLs nor fragments) of a page,
    without their #fragment or ?query."""
    out = []
    for m in re.finditer(r"""\b(?:href|src)\s*=\s*(["'])(.*?)\1""", text, re.I | re.S):
        link = m.group(2).strip()
        if not link or link.startswith(("#", "data:", "javascript:", "mailto:")) or \
                re.match(r"^[a-z][a-z0-9+.-]*://", link, re.I):
            continue
        link = re.split(r"[#?]", link, maxsplit=1)[0]
        if link:
            out.append(link)
    return list(dict.fromkeys(out))


def dead_links(page: Path) -> list[str]:
    """Local links of an HTML page that do not resolve to a file next to it."""
    text = Path(page).read_text(encoding="utf-8")
    return [link for link in local_links(text)
            if not (Path(page).parent / unquote(link)).exists()]


def chromium() -> str | None:
    """The headless browser the report checks use (Debian's ``chromium``), if installed."""
    return shutil.which("chromium") or next(
        (p for p in ("/usr/bin/chromium", "/usr/bin/chromium-browser") if Path(p).exists()),
        None)


def screenshot(page: Path, png: Path, width: int = 1280, height: int = 1600,
               browser: str | None = None, timeout: float = 120) -> Path:
    """A PNG of an HTML page as headless Chromium shows it (no network: the page must not
    need any).  RuntimeError when no browser is installed or no image came out."""
    browser = browser or chromium()
    if browser is None:
        raise RuntimeError("no Chromium installed (Debian package `chromium`)")
    with tempfile.TemporaryDirectory(prefix="vgkernels-chromium-") as profile:
        proc = subprocess.run(
            [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
             "--no-first-run", "--disable-background-networking", "--disable-component-update",
             "--disable-sync", "--hide-scrollbars", f"--user-data-dir={profile}",
             f"--screenshot={png}", f"--window-size={width},{height}",
             Path(page).resolve().as_uri()],
            capture_output=True, text=True, timeout=timeout, check=False)
    if not Path(png).exists():
        raise RuntimeError(f"Chromium wrote no screenshot of {page}: {proc.stderr[-500:]}")
    return Path(png)
