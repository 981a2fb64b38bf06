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


# -- the GHASH multiply's default follows the CPU the code is scheduled for --------------------

@pytest.mark.parametrize("be", BACKENDS, ids=lambda b: b.name)
def test_karatsuba_default_follows_the_cpu(be):
    """Karatsuba where the multiplies share the AES pipes (AMD, generic names), schoolbook
    where (V)PCLMULQDQ has a port of its own (Intel): for each, the default build keeps the
    plain prefix and the other multiply is a named variant."""
    for cpu, kara in (("znver3", be.karatsuba), ("x86-64-v3", be.karatsuba),
                      ("sapphirerapids", False), ("icelake-server", False)):
        d = Variant().resolved(be, cpu)
        assert d.karatsuba is kara
        assert symbol_prefix(be, Variant(), cpu) == f"vg_{be.name}"
        other = symbol_prefix(be, Variant(karatsuba=not kara), cpu)
        assert other != f"vg_{be.name}" and other.endswith("_k") is (not kara)
    assert Variant().resolved(be).karatsuba is be.karatsuba_for()


def test_x86_backends_default_to_karatsuba_on_amd():
    assert [b.name for b in BACKENDS if b.karatsuba] == [
        b.name for b in BACKENDS if b.prims == "x86"]


def test_intel_cpu_names_are_names_llvm_knows():
    """A misspelt name in CLMUL_OWN_PORT would silently keep Karatsuba on that CPU; LLVM warns
    on stderr about a processor it does not know (the last name proves the check can fail)."""
    import subprocess
    import sys

    from vgkernels.backends import CLMUL_OWN_PORT

    code = ("import sys, llvmlite.binding as llvm\n"
            "llvm.initialize_native_target(); llvm.initialize_native_asmprinter()\n"
            "t = llvm.Target.from_default_triple()\n"
            "for n in sys.argv[1:]:\n"
            "    t.create_target_machine(cpu=n).emit_assembly("
            "llvm.parse_assembly('define i32 @f() { ret i32 0 }'))\n"
            "    print(n, file=sys.stderr, flush=True)\n")
    names = sorted(CLMUL_OWN_PORT)
    out = subprocess.run([sys.executable, "-c", code, *names, "rocketlakee"],
                         capture_output=True, text=True, timeout=120).stderr
    unknown = [line.split("'")[1] for line in out.splitlines()
               if "not a recognized processor" in line]
    assert set(unknown) == {"rocketlakee"}, out
