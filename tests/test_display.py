"""Numbers for people in report tables (vgkernels.report.display) and the offline page
helpers (vgkernels.report.pages)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from vgkernels.report import display, pages


@pytest.mark.parametrize("x, text", [
    (30.84062, "30.8"), (3.084062e+01, "30.8"), (1234.5, "1,230"), (0.0123456, "0.0123"),
    (9.996, "10.0"), (99.96, "100"), (52.44, "52.4"), (1081.8, "1,080"), (-14.31, "-14.3"),
    (27_700.0, "27,700"), (100.0, "100"), (0.0, "0"), (3e-7, "0.000000300"),
    (float("nan"), "—"), (None, "—"), (float("inf"), "—"),
])
def test_three_significant_figures(x, text):
    assert display.sig(x) == text


@given(st.floats(min_value=1e-9, max_value=1e12, allow_nan=False))
def test_sig_is_positional_and_close(x):
    text = display.sig(x)
    assert "e" not in text.lower()
    back = float(text.replace(",", ""))
    assert math.isclose(back, x, rel_tol=0.0051)  # 3 significant figures: within half a unit
    digits = text.replace(",", "").replace(".", "").lstrip("0")
    assert len(digits) <= 3 or back >= 1000  # big numbers keep their zeros before the point


def test_column_kinds():
    kind = display.column_kind
    assert kind("min_ns") == kind("ns") == kind("fixed_ns") == kind("seal ns") == "ns"
    assert kind("gather/copy+ip") == kind("OpenSSL / ours") == kind("ratio") == "ratio"
    assert kind("vs OpenSSL @16 KiB") == "ratio"
    assert kind("excess") == kind("change") == "pct"
    assert kind("r2_linear") == "r2"
    assert kind(("vaes_avx512", "aligned")) == "number"
    assert kind("two-slice first", ns=["two-slice first"]) == "ns"


def test_people_formats_by_column():
    df = pd.DataFrame({"backend": ["a", "b"], "min_ns": [30.84062, 1234.5],
                       "gather/copy+ip": [1.23456, 0.9], "r2_linear": [0.41234, 0.99],
                       "excess": [0.0451, -0.02], "points": [32, 80000],
                       "fixed": [3.084062e+01, 2.0], "ok": [True, False],
                       "threshold": pd.array([None, 1456], dtype="Int64")})
    p = display.people(df)
    assert list(p["min_ns"]) == ["30.8", "1,230"]
    assert list(p["gather/copy+ip"]) == ["1.23", "0.90"]
    assert list(p["r2_linear"]) == ["0.412", "0.990"]
    assert list(p["excess"]) == ["+4.5%", "-2.0%"]
    assert list(p["points"]) == ["32", "80,000"]
    assert list(p["fixed"]) == ["30.8", "2.00"]
    assert list(p["ok"]) == [True, False]
    assert list(p["threshold"]) == ["—", "1456"]


def test_frame_html_scrolls_and_has_no_scientific_notation():
    df = pd.DataFrame(np.array([[3.084062e+01, 1.5e-5, 123456.789]]), columns=["a", "b", "c"])
    html = display.frame_html(df)
    assert html.startswith('<div class="vg-scroll"') and "overflow-x:auto" in html
    assert "e+" not in html and "e-0" not in html
    assert ">30.8<" in html and ">0.0000150<" in html and ">123,000<" in html
    wide = pd.DataFrame({"x": [1.0]}, index=pd.Index(["row"], name="k"))
    assert ">row<" in display.frame_html(wide)  # a meaningful index is kept


def test_install_outside_ipython_is_a_no_op():
    assert display.install() is False


def test_local_links_and_remote_refs():
    text = ('<a href="02.html#top">x</a><img src=\'figures/a%20b.png\'>'
            '<a href="https://example.org/x">e</a><a href="#h">h</a>'
            '<img src="data:image/png;base64,AAAA">'
            '<script src="https://cdnjs.cloudflare.com/require.js"></script>')
    assert pages.local_links(text) == ["02.html", "figures/a%20b.png"]
    assert len(pages.remote_refs(text)) == 1
    fixed = pages.make_offline("<html><head>" + text + "</head></html>")
    assert not pages.remote_refs(fixed) and ".vg-scroll" in fixed


def test_dead_links(tmp_path):
    (tmp_path / "figures").mkdir()
    (tmp_path / "figures" / "a b.png").write_bytes(b"x")
    page = tmp_path / "p.html"
    page.write_text('<img src="figures/a%20b.png"><a href="gone.html">g</a>')
    assert pages.dead_links(page) == ["gone.html"]
