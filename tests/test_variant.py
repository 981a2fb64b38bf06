"""vgkernels.variant: the one place a Variant is written as text, as columns and as symbols."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from vgkernels.backends import BACKENDS
from vgkernels.bench import store
from vgkernels.variant import FIELDS, NO_COLUMNS, Tail, Variant, columns_of_tag, symbol_prefix

BE = st.sampled_from(BACKENDS)


@st.composite
def resolved(draw) -> tuple[object, Variant]:
    be = draw(BE)
    g = draw(st.sampled_from(be.groups))
    v = Variant(tail=draw(st.sampled_from(list(Tail))), group=g,
                stitch_min=draw(st.integers(g, 2 * g)), karatsuba=draw(st.booleans()),
                skew=draw(st.integers(0, 9)))
    return be, v.resolved(be)


def test_parse():
    v = Variant.parse("tail=split,group=8,stitch_min=16")
    assert (v.tail, v.group, v.stitch_min, v.karatsuba, v.skew) == ("split", 8, 16, None, None)
    assert v.tail is Tail.SPLIT
    assert Variant.parse("full") == Variant(tail="full") == Variant()
    assert Variant.parse("karatsuba").karatsuba is True
    assert Variant.parse("karatsuba=0").karatsuba is False
    assert Variant.parse(None) == Variant.parse("") == Variant()
    with pytest.raises(ValueError, match="unknown variant parameter 'colour'"):
        Variant.parse("colour=blue")
    with pytest.raises(ValueError, match="tail must be 'full' or 'split'"):
        Variant.parse("tail=half")


def test_fields_are_the_dataclass_fields():
    assert FIELDS == ("tail", "group", "stitch_min", "karatsuba", "skew")


@given(resolved())
def test_text_and_columns_round_trip(bv):
    be, v = bv
    back = Variant.parse(v.tag())
    # the text names karatsuba only when on: in a resolved variant's text, absent means off
    assert replace(back, karatsuba=bool(back.karatsuba)).resolved(be) == v
    assert columns_of_tag(v.tag()) == v.columns()
    assert Variant(**v.columns()) == v


def test_columns_are_plain_values():
    cols = Variant(tail="split").resolved(BACKENDS[0]).columns()
    assert type(cols["tail"]) is str and cols["tail"] == "split"
    assert columns_of_tag("openssl") == NO_COLUMNS == columns_of_tag(None)


@given(resolved())
def test_symbol_prefix_names_every_field(bv):
    be, v = bv
    p = symbol_prefix(be, v)
    if v == Variant().resolved(be):
        assert p == f"vg_{be.name}"
    else:
        k = "_k" if v.karatsuba else ""
        assert p == f"vg_{be.name}_{v.tail}_g{v.group}_s{v.stitch_min}_r{v.skew}{k}"


def test_old_samples_get_their_columns(tmp_path):
    """Sample rows of data schema 3 carried the variant only as text: loading decodes it."""
    import json

    import pandas as pd

    tag = "tail=split,group=8,stitch_min=16,skew=6,karatsuba"
    sp = pd.DataFrame({"run_id": ["r", "r"], "impl": ["vgkernels", "openssl"],
                       "backend": ["vaes_avx2"] * 2, "variant": [tag, "openssl"],
                       "op": ["seal", "openssl"], "ns": [1.0, 2.0]})
    sp.to_csv(tmp_path / "s-samples.csv", index=False)
    (tmp_path / "s-meta.json").write_text(json.dumps({"schema": 3}))
    _, got = store.load_folder(tmp_path)
    assert got.loc[0, ["tail", "group", "stitch_min", "karatsuba", "skew"]].tolist() == [
        "split", 8, 16, True, 6]
    assert got.loc[1, list(FIELDS)].isna().all()
    assert str(got["group"].dtype) == "Int64" and str(got["karatsuba"].dtype) == "boolean"
