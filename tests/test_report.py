"""The report batch (``vgkernels report``): the headline table, notebook selection, failure
reporting, and a tiny batch run from an unactivated environment whose index.html is opened
in headless Chromium (skipped, saying so, when Chromium is not installed)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import numpy as np
import pandas as pd
import pytest

from vgkernels import dispatch, machine
from vgkernels.backends import BY_NAME
from vgkernels.report import batch, copy_below, session
from vgkernels.report import notebooks as nbs

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = shutil.which("chromium") or next(
    (p for p in ("/usr/bin/chromium", "/usr/bin/chromium-browser") if Path(p).exists()), None)


# -- pieces ----------------------------------------------------------------------------------


def test_select_notebooks():
    paths = [Path(f"{n}.ipynb") for n in nbs.NOTEBOOKS]
    pick = lambda only: [p.stem for p in nbs.select(paths, only)]  # noqa: E731
    assert pick(None) == list(nbs.NOTEBOOKS)
    assert pick(["02"]) == ["02_block_counts"]
    assert pick(["4"]) == ["04_copy_below"]
    assert pick(["copy_below", "06_peers_roofline"]) == ["04_copy_below", "06_peers_roofline"]
    assert pick(["nothing"]) == []


def test_profiles_and_backends():
    assert [session.get_profile(p).name for p in session.PROFILES] == ["tiny", "quick", "full"]
    with pytest.raises(ValueError, match="unknown profile"):
        session.get_profile("huge")
    assert session.parse_backends("a, b c") == ["a", "b", "c"]
    assert session.parse_backends(None) is None
    from vgkernels.backends import choose, usable

    assert session.choose_backends(None, "tiny") == [choose().name]
    assert session.choose_backends(None, "quick") == [b.name for b in usable()]
    with pytest.raises(ValueError, match="unknown backend"):
        session.choose_backends(["nope"], "quick")


def test_targets_notebook_measures_the_issues_backends_unless_named():
    """Notebook 10 by default measures the backends issue 12's targets are set for (not
    `portable`, whose bound is meaningless); backends named by the caller are kept."""
    from vgkernels.backends import usable
    from vgkernels.bench.targets import BACKENDS
    from vgkernels.report import targets as tg

    got = session.choose_backends(None, "quick", tg.only(None))
    assert got == [b.name for b in usable() if b.name in BACKENDS]
    assert "portable" not in got
    assert tg.only(["portable"]) is None
    assert session.choose_backends(["portable"], "quick", tg.only(["portable"])) == ["portable"]


def test_profile_plans():
    from vgkernels.backends import BACKENDS
    from vgkernels.report import (
        block_counts,
        inventory,
        peers_roofline,
        tail_sizes,
        two_slice,
    )

    assert block_counts.sizes("full") == [16 * b for b in range(1, 73)]
    assert set(block_counts.THREAD_SIZES) <= set(block_counts.sizes("quick"))
    assert {384, 640} <= set(block_counts.sizes("tiny"))
    for prof in session.PROFILES:
        for sz in (peers_roofline.sizes(prof),):
            assert set(peers_roofline.HEADLINE_SIZES) <= set(sz)
        assert {n % 16 for n in two_slice.sizes(prof)} >= {0, 15}
        # both sides of the short path's limit: 127 + 1 byte fits, 128 + 1 does not
        assert 127 in two_slice.sizes(prof) and all(n >= 16 for n in two_slice.sizes(prof))
    assert {n % 16 for n in two_slice.sizes("full")} == set(range(16))
    assert {16, 128, 143, 2991} <= set(two_slice.sizes("full"))
    assert copy_below.sizes("full") is None and not copy_below.refine("tiny")
    for be in BACKENDS:
        g, s = tail_sizes.geometry(be.name)
        whole = {n // 16 for n in tail_sizes.plan(be.name, "quick") if n % 16 == 0}
        assert {s + t for t in range(g)} <= whole and s + 2 * g in whole
        assert {n % 16 for n in tail_sizes.plan(be.name, "full")} == set(range(16))
        groups = {v.group for v in inventory.variants(be.name, "full")}
        assert groups == set(be.groups)
        assert {v.tail for v in inventory.variants(be.name, "tiny")} == {"split", "full"}


def test_default_out_dir_is_reports_date_host():
    d = session.default_out_dir(ROOT / "tests")
    assert d.parent == ROOT / "reports"
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}-[A-Za-z0-9_.-]+", d.name)


def test_parameter_values():
    assert batch._value("true") is True
    assert batch._value("3") == 3
    assert batch._value("null") is None
    assert batch._value("vaes_avx512") == "vaes_avx512"


def test_kernel_spec_runs_this_interpreter():
    before = os.environ.get("JUPYTER_PATH")
    with batch.kernel() as name:
        from jupyter_client.kernelspec import KernelSpecManager

        spec = KernelSpecManager().get_kernel_spec(name)
        assert spec.argv[0] == sys.executable
    assert os.environ.get("JUPYTER_PATH") == before


def test_headline_table_from_notes():
    notes = {
        "06_peers_roofline": {"headline": {"backends": {"vaes_avx512": {
            "gbps_16k": 14.2, "ns_16": 30.4, "ns_1k": 99.4,
            "best_peer_16k": "AWS-LC 5.12.0", "best_peer_ratio_16k": 1.21,
            "best_peer_1k": "OpenSSL 4.0.3 (cryptography's)", "best_peer_ratio_1k": 1.83,
            "peers_16k": {"OpenSSL 3.0.19 (system, no VAES code)": 3.11,
                          "AWS-LC 5.12.0": 1.21}}}}},
        "04_copy_below": {"headline": {"backends": {
            "vaes_avx512": {"aligned": 0, "unaligned": 1456},
            "aesni_pclmul": {"aligned": None, "unaligned": 2048}}}},
        "02_block_counts": {"headline": {"backends": {"vaes_avx512": {
            "split_384": 250.0, "full_384": 190.0, "change_384": -0.24}}}},
    }
    t = batch.headline_table(notes, text=True)
    assert list(t["backend"]) == ["aesni_pclmul", "vaes_avx512"]  # backend-table order
    row = t.set_index("backend").loc["vaes_avx512"]
    assert row["GB/s @16 KiB"] == "14.20"
    assert row["vs best peer @16 KiB"] == "1.21× (AWS-LC 5.12.0)"
    assert row["vs best peer @1 KiB"] == "1.83× (OpenSSL 4.0.3 (cryptography's))"
    assert row["vs OpenSSL 3.0.19 (system, no VAES code) @16 KiB"] == "3.11×"
    assert row["vs AWS-LC 5.12.0 @16 KiB"] == "1.21×"
    assert row["copy_below (aligned, unaligned)"] == "0 (never copy), 1456 B"
    assert row["split→full @384 B"] == "-24.0% (250 → 190 ns)"
    other = t.set_index("backend").loc["aesni_pclmul"]
    assert other["copy_below (aligned, unaligned)"] == "no crossover, 2048 B"
    assert other["GB/s @16 KiB"] == "—"
    assert batch.headline_table({}).empty


def test_copy_below_document_is_what_the_api_reads(tmp_path):
    rng = np.random.default_rng(1)
    rows = []
    for aligned, n0 in ((True, 512), (False, 2048)):
        for n in (64, 256, 1024, 4096, 16384):
            size = n if aligned else n - 1
            for op, ns in (("copy_ip", 50 + 0.25 * n), ("gather", 50 + 0.25 * n + 0.1 * (n0 - n))):
                for _ in range(9):
                    rows.append({"backend": "vaes_avx512", "variant": "v", "op": op,
                                 "shape": "n+1", "aligned": aligned, "n": size,
                                 "bytes": size + 1, "ns": ns * rng.uniform(1.0, 1.002)})
    samples = pd.DataFrame(rows)
    res = copy_below.thresholds(samples, n_boot=50)
    doc = copy_below.document(res, samples, {"run_id": "r1"})
    dispatch.validate(doc, "test")
    assert doc["cpu"]["llvm_cpu"] == machine.cpu_key()["llvm_cpu"] and doc["run_id"] == "r1"
    be = doc["backends"]["vaes_avx512"]
    assert be["aligned"] == 1025 and be["unaligned"] == 4096
    path = copy_below.write(doc, tmp_path / "copy_below.json")
    assert json.loads(path.read_text())["backends"]["vaes_avx512"]["ci"]["aligned"][
        "n_boot"] == 50
    # what the API reads: installed for this CPU, it is the first table looked up
    dispatch.install(doc, tmp_path / "user")
    tables = [("user", str(tmp_path / "user" / dispatch.file_name(doc["cpu"])), doc)]
    t = dispatch.lookup(BY_NAME["vaes_avx512"], tables=tables)
    assert (t.aligned, t.unaligned, t.source) == (1025, 4096, "user")
    lines = copy_below.statements(res, samples)
    assert lines and "copy dispatch pays off" in lines[0] and "1025" in lines[0]


# -- the batch -------------------------------------------------------------------------------


def _notebook(path: Path, *cells: str) -> None:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = dict(nbs.KERNELSPEC)
    params = nbformat.v4.new_code_cell('profile = "quick"\nout_dir = None\ndata_dir = None\n'
                                       "backends = None")
    params.metadata["tags"] = ["parameters"]
    nb.cells = [params] + [nbformat.v4.new_code_cell(c) for c in cells]
    nbformat.write(nb, path)


def test_failing_notebook_is_reported_not_hidden(tmp_path, capsys):
    d = tmp_path / "notebooks"
    d.mkdir()
    _notebook(d / "01_fine.ipynb", "x = 1 + 1")
    _notebook(d / "02_broken.ipynb", "y = 1 / 0")
    out = tmp_path / "out"
    rc = batch.main(["--profile", "tiny", "--out", str(out), "--notebooks", str(d),
                     "--no-progress"])
    assert rc == 1
    text = (out / "index.html").read_text()
    assert "1 notebook(s) failed" in text and "ZeroDivisionError" in text
    assert "02_broken.html" in text and (out / "02_broken.html").exists()
    idx = json.loads((out / "index.json").read_text())
    assert [r["status"] for r in idx["notebooks"]] == ["ok", "failed"]
    assert "FAILED: 02_broken" in capsys.readouterr().err


def test_index_links_only_files_a_committed_report_has(tmp_path):
    """Executed notebooks and raw data stay out of git: the index names them without linking
    them, and links nothing that is absent (a figure or table that was not written)."""
    out = tmp_path / "rep"
    (out / "notes").mkdir(parents=True)
    (out / "figures").mkdir()
    (out / "figures" / "02_block_counts-steps.png").write_bytes(b"png")
    (out / "02_block_counts.html").write_text("<html></html>")
    (out / "notes" / "02_block_counts.json").write_text(json.dumps({
        "profile": "quick", "conclusions": ["**Recommendation:** x"],
        "figures": [{"name": "steps", "path": "figures/02_block_counts-steps.png",
                     "headline": True, "title": "steps"},
                    {"name": "gone", "path": "figures/02_block_counts-gone.png",
                     "headline": True, "title": "gone"}],
        "tables": ["tables/02_block_counts-missing.csv"],
        "sweeps": [{"label": "blocks", "files": ["data/vm/blocks.parquet"]}]}))
    runs = [batch.NotebookRun("02_block_counts", "ok", ipynb="02_block_counts.ipynb",
                              html="02_block_counts.html"),
            batch.NotebookRun("03_tail_sizes", "ok", ipynb="03_tail_sizes.ipynb",
                              html="03_tail_sizes.html")]
    from vgkernels.report import pages

    page = batch.write_index(out, runs, {"profile": "quick", "host": "h", "date": "d"})
    assert not pages.dead_links(page), pages.dead_links(page)
    text = page.read_text()
    assert "02_block_counts.html" in pages.local_links(text)
    assert "<code>02_block_counts.ipynb</code>" in text
    assert "<code>data/vm/blocks.parquet</code>" in text
    assert "smoke test" not in text.lower()  # quick profile
    idx = out / "index.json"
    idx.write_text(json.dumps({"profile": "tiny", "host": "h", "date": "d",
                               "notebooks": [vars(r) for r in runs]}))
    (out / "02_block_counts.html").write_text(
        '<html><head><script src="https://cdnjs.cloudflare.com/x/require.min.js"></script>'
        "</head><body>page</body></html>")
    text = batch.reindex(out).read_text()  # rewrites the index, pages made offline
    assert "smoke test, not for conclusions" in text.lower()
    assert not pages.remote_refs((out / "02_block_counts.html").read_text())
    assert not pages.dead_links(out / "index.html")


@pytest.mark.parametrize("page", sorted((ROOT / "reports").glob("*/*.html")),
                         ids=lambda p: f"{p.parent.name}/{p.name}")
def test_committed_report_pages_work_offline(page):
    """What is committed under reports/: no link to a file that is not there (executed
    notebooks and raw data stay out of git), nothing fetched from the network."""
    from vgkernels.report import pages

    assert not pages.dead_links(page), pages.dead_links(page)
    assert not pages.remote_refs(page.read_text(encoding="utf-8"))


def test_unknown_notebook_is_an_error(capsys):
    assert batch.main(["--only", "99_nothing", "--no-progress"]) == 2
    assert "no notebook matches" in capsys.readouterr().err


def _png_stats(path: Path) -> tuple[tuple[int, int], int, float]:
    from PIL import Image

    im = Image.open(path).convert("RGB")
    colours = im.getcolors(maxcolors=1 << 20) or []
    px = np.asarray(im, dtype=np.int16)
    not_white = float(np.mean(np.any(px < 235, axis=2)))
    return im.size, len(colours), not_white


def test_batch_tiny_writes_index_and_renders(tmp_path):
    """The batch from an unactivated environment (no venv on PATH): index.html with the
    headline table and working links; then the page in headless Chromium."""
    out = tmp_path / "report"
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "JUPYTER_PATH")}
    env["PATH"] = "/usr/local/bin:/usr/bin:/bin"
    proc = subprocess.run(
        [sys.executable, "-m", "vgkernels", "report", "--profile", "tiny", "--out", str(out),
         "--only", "02", "04", "06", "--no-progress"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    best = session.choose_backends(None, "tiny")[0]
    assert re.search(rf"^{best}\s", proc.stdout, re.M), proc.stdout  # headline printed
    html = (out / "index.html").read_text()
    assert "<h2 id='headline'>Headline</h2>" in html and "class=\"dataframe headline\"" in html
    for col in ("GB/s @16 KiB", "ns @16 B", "ns @1 KiB", "vs best peer @16 KiB",
                "copy_below (aligned, unaligned)", "split→full @384 B"):
        assert col in html, col
    assert f"<td>{best}</td>" in html
    from vgkernels.report import pages

    links = set(pages.local_links(html))
    for name in ("02_block_counts", "04_copy_below", "06_peers_roofline"):
        assert f"{name}.html" in links
        assert f"{name}.ipynb" not in links and f"<code>{name}.ipynb</code>" in html  # local
    assert not any(link.startswith("data/") for link in links)  # raw data: never committed
    assert any(link.startswith("figures/") and link.endswith(".png") for link in links)
    assert "copy_below.json" in links and "01_inventory" in html  # not run: listed anyway
    assert "smoke test, not for conclusions" in html.lower()
    # every page of the report: offline, its local links resolve
    htmls = sorted(out.glob("*.html"))
    assert [p.name for p in htmls] == ["02_block_counts.html", "04_copy_below.html",
                                       "06_peers_roofline.html", "index.html"]
    for page in htmls:
        assert not pages.dead_links(page), (page.name, pages.dead_links(page))
        assert not pages.remote_refs(page.read_text()), page.name
    idx = json.loads((out / "index.json").read_text())
    assert idx["headline"][0]["backend"] == best
    assert idx["headline"][0]["GB/s @16 KiB"] > 0
    assert {r["name"]: r["status"] for r in idx["notebooks"]}["02_block_counts"] == "ok"

    if CHROMIUM is None:
        pytest.skip("the report's pages and links checked; Chromium is not installed (Debian "
                    "package `chromium`), so no page was rendered to a screenshot")
    for page in htmls:  # every page, not only the index
        shot = pages.screenshot(page, tmp_path / f"{page.stem}.png", height=900,
                                browser=CHROMIUM)
        assert shot.stat().st_size > 20_000, f"{page.name}: an empty screenshot"
        size, colours, not_white = _png_stats(shot)
        assert size == (1280, 900)
        assert colours > 50, f"{page.name}: screenshot has only {colours} colours"
        assert not_white > 0.03, f"{page.name}: almost blank ({not_white:.1%} non-white)"
    if os.environ.get("VG_REPORT_SCREENSHOT"):
        shutil.copy(tmp_path / "index.png", os.environ["VG_REPORT_SCREENSHOT"])


@pytest.mark.skipif(os.environ.get("VG_TEST_FRESH_VENV") != "1",
                    reason="set VG_TEST_FRESH_VENV=1 to run the README's report command in a "
                           "fresh venv (needs PyPI; minutes)")
def test_readme_flow_in_a_fresh_venv(tmp_path):
    venv = tmp_path / ".venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(venv / "bin" / "pip"), "install", "-q", "-e", str(ROOT)], check=True,
                   timeout=1800)
    out = tmp_path / "report"
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "JUPYTER_PATH")}
    proc = subprocess.run([str(venv / "bin" / "vgkernels"), "report", "--profile", "tiny",
                           "--out", str(out), "--no-progress"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=1800)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (out / "index.html").exists()
