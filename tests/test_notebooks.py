"""The report notebooks: stored without outputs and in step with their percent scripts, and
each one executed through papermill with the tiny profile, checking what it leaves behind
(tables, figures, copy_below.json, computed conclusions) and that no cell failed."""

from __future__ import annotations

import ast
import importlib.util
import json
import math
import re
from pathlib import Path

import nbformat
import pytest

from vgkernels.report import batch, session, tail_sizes
from vgkernels.report import notebooks as nbs

ROOT = Path(__file__).resolve().parents[1]
NB_DIR = ROOT / "notebooks"
PARAMS = {"profile", "out_dir", "data_dir", "backends"}


def _read(name: str) -> nbformat.NotebookNode:
    return nbformat.read(NB_DIR / f"{name}.ipynb", as_version=4)


# -- stored form ---------------------------------------------------------------------------------


def test_every_notebook_is_there():
    assert [p.stem for p in nbs.discover(NB_DIR)] == list(nbs.NOTEBOOKS)
    assert sorted(p.stem for p in NB_DIR.glob("[0-9][0-9]_*.py")) == list(nbs.NOTEBOOKS)


def test_ipynb_in_step_with_percent_scripts():
    stale = nbs.sync(NB_DIR, check=True)
    assert not stale, (f"regenerate with `vgkernels report --sync-notebooks`: "
                       f"{[p.name for p in stale]}")


@pytest.mark.parametrize("name", nbs.NOTEBOOKS)
def test_stored_without_outputs_with_parameters_cell(name):
    nb = _read(name)
    nbformat.validate(nb)
    assert nb.metadata.kernelspec.name == "python3"
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(not c.outputs and c.execution_count is None for c in code)
    tagged = [c for c in code if "parameters" in c.metadata.get("tags", [])]
    assert len(tagged) == 1
    names = {t.id for node in ast.parse(tagged[0].source).body if isinstance(node, ast.Assign)
             for t in node.targets}
    assert PARAMS <= names, f"{name}: parameters cell lacks {PARAMS - names}"


def test_stored_kernelspec_exists_in_this_environment():
    from jupyter_client.kernelspec import KernelSpecManager

    spec = KernelSpecManager().get_kernel_spec("python3")  # what ipykernel provides
    assert spec.language == "python"


# -- executed ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def kernel_name():
    with batch.kernel() as name:
        yield name


def _outputs(nb: nbformat.NotebookNode, kind: str) -> list[str]:
    texts = []
    for c in nb.cells:
        for o in c.get("outputs", []):
            data = o.get("data", {})
            if kind in data:
                v = data[kind]
                texts.append("".join(v) if isinstance(v, list) else v)
    return texts


def _execute(name: str, tmp: Path, kernel: str, **extra) -> tuple[Path, dict]:
    out = tmp / "report"
    params = {"profile": "tiny", "out_dir": str(out), "data_dir": str(out / "data"),
              "backends": None, **extra}
    run = batch.execute(NB_DIR / f"{name}.ipynb", out, params, kernel, html_out=True)
    assert run.status == "ok", f"{name} failed: {run.error}"
    return out, session.read_notes(out)[name]


@pytest.mark.parametrize("name", nbs.NOTEBOOKS)
def test_notebook_runs_tiny(name, tmp_path, kernel_name):
    why = nbs.skip_reason(name)
    if why:
        pytest.skip(f"{name} needs a tool: {why}")
    out, notes = _execute(name, tmp_path, kernel_name)
    nb = nbformat.read(out / f"{name}.ipynb", as_version=4)
    errors = [o for c in nb.cells for o in c.get("outputs", []) if o.output_type == "error"]
    assert not errors, errors
    injected = [c for c in nb.cells if "injected-parameters" in c.metadata.get("tags", [])]
    assert injected and "profile = \"tiny\"" in injected[0].source
    # conclusions: computed, saved, and shown in the notebook
    assert notes["conclusions"], "no conclusions"
    md = "\n".join(_outputs(nb, "text/markdown"))
    assert "### Conclusions" in md
    assert notes["conclusions"][0][:40] in md
    # figures and tables on disk
    assert notes["figures"], "no figures"
    for f in notes["figures"]:
        p = out / f["path"]
        assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and p.stat().st_size > 2000, p
    for t in notes["tables"]:
        assert (out / t).exists(), t
    for s in notes["sweeps"]:
        assert not s["errors"], s["errors"]
        for f in s["files"]:
            assert (out / f).exists(), f
    CHECKS[name](out, notes)
    _check_page(out, name, nb, notes)


SCI = re.compile(r"\b\d\.\d+e[+-]\d+\b")  # 3.084062e+01


def _check_page(out: Path, name: str, nb: nbformat.NotebookNode, notes: dict) -> None:
    """The HTML page: readable offline, numbers for people, recommendation first, links that
    resolve, and (with Chromium) a screenshot that is not blank."""
    from vgkernels.report import pages

    page = out / f"{name}.html"
    text = page.read_text(encoding="utf-8")
    assert not pages.remote_refs(text), pages.remote_refs(text)  # no CDN: renders offline
    assert not pages.dead_links(page), pages.dead_links(page)
    tables = "\n".join(_outputs(nb, "text/html"))
    assert not SCI.findall(tables), SCI.findall(tables)[:5]
    if "<table" in tables:
        assert "vg-scroll" in tables  # wide tables scroll instead of being clipped
    assert notes["conclusions"][0].startswith("**Recommendation:**"), notes["conclusions"][0]
    assert "smoke test, not for conclusions" in text.lower()  # the tiny profile says so
    assert "PR thread" not in text
    if pages.chromium() is None:
        return  # the screenshot needs Chromium; test_report says so when it is missing
    shot = pages.screenshot(page, out / f"{name}.png", height=1600)
    size, colours, not_white = _png_stats(shot)
    assert size == (1280, 1600)
    assert colours > 50 and not_white > 0.03, f"{name}: blank page ({not_white:.1%})"


def _png_stats(path: Path) -> tuple[tuple[int, int], int, float]:
    import numpy as np
    from PIL import Image

    im = Image.open(path).convert("RGB")
    colours = im.getcolors(maxcolors=1 << 20) or []
    px = np.asarray(im, dtype=np.int16)
    return im.size, len(colours), float(np.mean(np.any(px < 235, axis=2)))


def _check_inventory(out: Path, notes: dict) -> None:
    import pandas as pd

    sets = pd.read_csv(out / "tables" / "01_inventory-kernel_sets.csv")
    assert set(sets["tail"]) == {"full", "split"}
    assert (sets["obj_bytes"] > 0).all() and (sets["asm_lines"] > 0).all()
    times = pd.read_csv(out / "tables" / "01_inventory-compile_times.csv")
    assert (times["cold_compile_s"] > 0).all() and times["warm_from_cache"].all()
    check = pd.read_csv(out / "tables" / "01_inventory-selfcheck.csv")
    assert check["ok"].all()
    assert notes["headline"]["selfcheck_ok"] is True
    assert any("Self-check" in c for c in notes["conclusions"])


def _check_blocks(out: Path, notes: dict) -> None:
    import pandas as pd

    be = notes["backends"][0]
    t = pd.read_csv(out / "tables" / f"02_block_counts-thread_table-{be}.csv")
    aws = (["aws-lc", "aws-lc copy+seal (+1)", "aws-lc scatter (+1)"]
           if importlib.util.find_spec("_awscrt") else [])  # the thread's peer, when installed
    assert list(t.columns) == ["bytes", "in place", "OpenSSL", "out of place (+1)",
                               "OpenSSL (+1)", *aws, "in place change"]
    assert {384, 640} <= set(t["bytes"])
    cell = t.loc[t["bytes"] == 384, "in place"].iloc[0]
    assert "→" in cell and cell.count(",") == 2  # "a, b → c, d": two runs of each variant
    h = notes["headline"]["backends"][be]
    assert h["split_384"] > 0 and h["full_384"] > 0
    assert "`tail=" in notes["conclusions"][0] or "either tail" in notes["conclusions"][0]


def _check_tails(out: Path, notes: dict) -> None:
    import pandas as pd

    m = pd.read_csv(out / "tables" / "03_tail_sizes-models.csv")
    assert {"fixed", "per_block", "r2_linear", "per_group_iter", "per_leftover_block",
            "r2_grouped"} <= set(m.columns)
    assert set(m["tail"]) == {"split", "full"}
    ex = pd.read_csv(out / "tables" / "03_tail_sizes-excess.csv")
    assert {"measured", "predicted", "excess", "flagged"} <= set(ex.columns)

    nb = nbformat.read(out / "03_tail_sizes.ipynb", as_version=4)
    md = "\n".join(_outputs(nb, "text/markdown"))
    for be in notes["backends"]:  # the leftover range is the backend's own group
        group, _ = tail_sizes.geometry(be)
        assert f"1..{group - 1} blocks after the {group}-block loop" in md


def _check_copy_below(out: Path, notes: dict) -> None:
    from vgkernels import dispatch

    doc = json.loads((out / "copy_below.json").read_text())
    dispatch.validate(doc, "copy_below.json")
    assert set(doc["backends"]) == set(notes["backends"])
    for entry in doc["backends"].values():
        assert set(entry) >= {"aligned", "unaligned", "ci"}
        assert set(entry["ci"]) == {"aligned", "unaligned"}
    assert "copy_below.json" in notes["files"]
    assert any("copy dispatch" in c for c in notes["conclusions"])


def _check_two_slice(out: Path, notes: dict) -> None:
    import pandas as pd

    if not notes["backends"]:
        assert "nothing to compare" in notes["conclusions"][1]
        return
    be = notes["backends"][0]
    t = pd.read_csv(out / "tables" / f"05_two_slice-thread_table-{be}.csv")
    assert {"n", "n % 16", "two-slice first", "copy first",
            "copy first / two-slice first"} <= set(t.columns)
    assert 15 in set(t["n % 16"])


def _check_peers(out: Path, notes: dict) -> None:
    be = notes["backends"][0]
    h = notes["headline"]["backends"][be]
    assert h["gbps_16k"] > 0 and h["ns_16"] > 0 and h["ns_1k"] > 0
    assert 0 < h["roofline_share"] < 2
    # the API's call cost against cryptography, measured in the same process
    assert h["api_ns_16"] > 0 and h["api_crypto_ratio_16"] > 0
    import pandas as pd

    t = pd.read_csv(out / "tables" / "06_peers_roofline-api_cost.csv")
    assert {"encrypt", "decrypt", "encrypt two pieces", "stream update"} <= set(t["op"])


def _check_predict(out: Path, notes: dict) -> None:
    import pandas as pd

    from vgkernels.predict import recommend

    df = pd.read_csv(out / "tables" / "07_predict-predictions.csv")
    assert set(df["region"]) >= {"stitch", "leftover"}
    assert (df.loc[df["region"] == "stitch", "cycles_per_byte"] > 0).all()
    v = pd.read_csv(out / "tables" / "07_predict-host_validation.csv")
    assert len(v) >= 1 and (v["ratio"] > 0).all()
    table = recommend.load(out / recommend.FILENAME)
    assert "znver4" in table["cpus"] and table["llvm_mca"].startswith("19")
    assert "worst_ratio" in notes["headline"]


def _check_hosts(out: Path, notes: dict) -> None:
    import pandas as pd

    t = pd.read_csv(out / "tables" / "09_across_hosts-seal_by_machine.csv")
    assert {"backend", "bytes"} <= set(t.columns) and len(t.columns) >= 3
    assert any("machine" in c for c in notes["conclusions"])


def _check_constant_time(out: Path, notes: dict) -> None:
    import pandas as pd

    static = pd.read_csv(out / "tables" / "08_constant_time-static.csv")
    kern = static[static["name"] != "controls"]
    assert len(kern) >= 1 and (kern["errors"] == 0).all() and (kern["known"] == 0).all()
    assert (kern["ir_instructions"] > 5000).all() and (kern["cond_jumps"] > 0).all()
    ctl = static[static["name"] == "controls"].iloc[0]
    assert ctl["address"] >= 1 and ctl["branch"] >= 2 and ctl["errors"] > 0
    found = pd.read_csv(out / "tables" / "08_constant_time-control_findings.csv")
    assert {"address", "branch"} <= set(found["kind"])
    tt = pd.read_csv(out / "tables" / "08_constant_time-timing.csv")
    assert set(tt["impl"]) == {"kernel", "control"} and set(tt["op"]) == {"seal", "open",
                                                                          "key_init"}
    assert (tt["samples"] == 600).all() and tt["t"].notna().all()
    assert notes["headline"]["static_errors"] == 0 and notes["headline"]["samples"] == 600
    assert any("smoke test" in c for c in notes["conclusions"])
    assert any("Negative controls" in c and "every leak is caught" in c
               for c in notes["conclusions"])


def _check_targets(out: Path, notes: dict) -> None:
    import pandas as pd

    from vgkernels.analysis.targets import COLUMNS

    t = pd.read_csv(out / "tables" / "10_targets-targets.csv")
    assert list(t.columns) == COLUMNS and len(t) >= 1
    assert {1, 2, 3, 4} <= set(t["target"])  # tiny: no worker sweeps (targets 5, 6, peers)
    # a remainder row measures a difference (t(1024 + 16 r) - t(1024)), which noise can make
    # negative; every other row is a time or a rate
    diff = t["check"].str.startswith("remainder")
    assert diff.any() and t.loc[diff, "measured"].map(math.isfinite).all()
    assert (t.loc[~diff, "measured"].dropna() > 0).all()
    # the stack's four 16-byte offsets in a line, a context row naming each
    line = t[t["check"].str.contains("16-byte offsets within a line")]
    assert len(line) >= 1 and line["limit"].isna().all()
    assert all(f"{c}: " in d for d in line["detail"] for c in (0, 16, 32, 48))
    # the key context on other pages, a context row counting the slow ones
    ctx = t[t["check"].str.contains("the key context's pages")]
    assert len(ctx) >= 1 and ctx["limit"].isna().all()
    assert all("fresh contexts over 1.03: " in d for d in ctx["detail"])
    assert any("checks hold on this host" in c for c in notes["conclusions"])
    # target 1's loop replayed: loop and core per backend of the bulk rows
    rep = pd.read_csv(out / "tables" / "10_targets-loop_replay.csv")
    bulk = set(t.loc[t["check"] == "bulk vs instruction-mix bound", "backend"])
    assert set(rep["backend"]) == bulk
    for be, g in rep.groupby("backend"):
        by = g.set_index("part")
        assert {"loop", "core"} <= set(by.index) and by.loc["core", "vs_core"] == 1
        assert by.loc["loop", "instructions"] > by.loc["core", "instructions"]
        assert any(c.startswith(f"Target 1, `{be}`: its bulk loop replayed")
                   for c in notes["conclusions"])


CHECKS = {"01_inventory": _check_inventory, "02_block_counts": _check_blocks,
          "03_tail_sizes": _check_tails, "04_copy_below": _check_copy_below,
          "05_two_slice": _check_two_slice, "06_peers_roofline": _check_peers,
          "07_predict": _check_predict, "08_constant_time": _check_constant_time,
          "09_across_hosts": _check_hosts, "10_targets": _check_targets}
