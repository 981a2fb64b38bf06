"""vgkernels.predict: the assembly parser, the regions it finds in every backend's kernels
(compiled for znver4 explicitly, so the host does not matter), llvm-mca's figures for loops
whose bound is known, the CPU feature probe, the recommendation table, and a missing
llvm-mca reported as such."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from vgkernels.asm import cfg, regions
from vgkernels.backends import BACKENDS, get
from vgkernels.listing import assembly
from vgkernels.predict import mca, model, recommend, targets
from vgkernels.variant import Variant

MCA_MISSING = mca.missing_reason()
needs_mca = pytest.mark.skipif(MCA_MISSING is not None, reason=f"{MCA_MISSING}")
needs_llc = pytest.mark.skipif(targets.find_llc() is None,
                               reason="llc 19 or newer not found (Debian's llvm-19 package "
                                      "provides it)")

# -- the parser ---------------------------------------------------------------------------------

TOY = """\
\t.type\tf,@function
f:
\tmovl\t$0, %eax
.LBB0_1:
\tvaesenc\t%xmm1, %xmm0, %xmm0
\tvaesenc\t%xmm1, %xmm0, %xmm0
\tcmpl\t$200, %eax
\tja\t.LBB0_3
.LBB0_2:
\taddl\t$1, %eax
\tcmpl\t%esi, %eax
\tjb\t.LBB0_1
\tretq
.LBB0_3:
\tvpshufb\t%xmm2, %xmm0, %xmm0
\tvpshufb\t%xmm2, %xmm0, %xmm0
\tvpshufb\t%xmm2, %xmm0, %xmm0
\tjmp\t.LBB0_2
.Lfunc_end0:
"""


def test_parser_finds_the_loop_and_its_cheap_way_round():
    fn = cfg.functions(TOY)["f"]
    assert fn.blocks[".LBB0_1"].succs == [".LBB0_3", ".LBB0_2"]
    assert fn.blocks[".LBB0_3"].succs == [".LBB0_2"]
    (lp,) = cfg.loops(fn)
    assert set(lp.blocks) == {".LBB0_1", ".LBB0_2", ".LBB0_3"}
    # the rare block (.LBB0_3, the longer way) is not on the steady-state path
    assert cfg.hot_path(fn, lp) == [".LBB0_1", ".LBB0_2"]


# -- the regions in the real kernels -------------------------------------------------------------


def _cases():
    out = [("znver4", b.name, "default", Variant()) for b in BACKENDS]
    for b in BACKENDS:
        if b.prims == "portable":
            continue
        d = Variant().resolved(b)
        out += [("znver4", b.name, f"group={g}", Variant(group=g))
                for g in b.groups if g != d.group]
        if b.name.startswith("vaes"):
            out += [("znver4", b.name, f"karatsuba={not d.karatsuba}",
                     Variant(karatsuba=not d.karatsuba)),
                    ("znver4", b.name, f"skew={0 if d.skew else 6}",
                     Variant(skew=0 if d.skew else 6))]
    # LLVM lays the loops out in another order for these CPUs: the regions are recognised
    # by what they do, not where they sit
    out += [("sapphirerapids", "vaes_avx2", "stitch_min=8", Variant(stitch_min=8)),
            ("icelake-server", "aesni_pclmul_avx", "default", Variant())]
    return out


@pytest.mark.parametrize(("cpu", "backend", "label", "variant"), _cases(),
                         ids=[f"{c}-{b}-{lb}" for c, b, lb, _ in _cases()])
def test_regions_found_in_every_backend_and_variant(cpu, backend, label, variant):

    be = get(backend)
    v = variant.resolved(be)
    prefix, text = assembly(be, v, cpu)
    found = regions.regions(text, prefix, be, v)
    lead = be.lead_group > v.group  # enc hands long messages to its lead function
    assert set(found) == {"stitch", "leftover", "key_setup", "ctr", "ghash"} | (
        {"lead"} if lead else set())
    assert found["ctr"].blocks_per_iteration == found["ghash"].blocks_per_iteration == v.group
    st, lo = found["stitch"], found["leftover"]
    assert st.blocks_per_iteration == v.group
    assert lo.blocks_per_iteration == min(v.group // be.width, 4) * be.width
    for r in (st, lo):  # a way round a loop: it branches somewhere
        assert any(i.split()[0].startswith("j") for i in r.instructions)
    if be.prims == "portable":
        assert st.aes_blocks() is None  # table-free AES: no instruction to count
        return
    # the counted AES work agrees with what the variant says each iteration does
    assert st.aes_blocks() == v.group
    assert lo.aes_blocks() == lo.blocks_per_iteration
    assert st.count(regions.CLMUL) > 0 and lo.count(regions.CLMUL) > 0
    assert found["key_setup"].count(regions.CLMUL) > 0 and found["key_setup"].aes_blocks() is None
    assert found["ctr"].aes_blocks() == v.group and found["ctr"].count(regions.CLMUL) == 0
    assert found["ghash"].aes_blocks() is None and found["ghash"].count(regions.CLMUL) > 0
    if lead:
        ld = found["lead"]
        assert ld.function.startswith("vg.bulk.enclead.")
        assert ld.blocks_per_iteration == ld.aes_blocks() == be.lead_group
        assert ld.count(regions.CLMUL) > st.count(regions.CLMUL)


# -- llvm-mca on loops with a known bound --------------------------------------------------------


@needs_mca
def test_table_in_worker_processes_equals_in_process(monkeypatch):
    """The notebook's table runs its cases in spawned workers: same rows, same order.  In
    either, CPUs whose defaults agree share one generated module (the Python generation is
    a third of a case), and the rows are those of each CPU's own `predict`."""
    from vgkernels.predict import predictor

    args = (["znver4", "znver3"], ["aesni_pclmul"], "default", ("stitch", "ctr"))
    alone = pd.DataFrame([r for cpu in args[0] for r in predictor.rows(
        predictor.predict(cpu, "aesni_pclmul", Variant(), args[3]), "default")])
    made = []
    real = predictor.generate
    monkeypatch.setattr(predictor, "generate",
                        lambda be, v, cpu=None: made.append(cpu) or real(be, v, cpu=cpu))
    one = predictor.table(*args, workers=1)
    assert made == ["znver4"]  # one module for both Zen CPUs, compiled for each
    two = predictor.table(*args, workers=2)
    assert len(one) == 4
    pd.testing.assert_frame_equal(one, two)
    pd.testing.assert_frame_equal(one, alone)


@needs_mca
@pytest.mark.parametrize("cpu", ["znver3", "znver4", "icelake-server", "sapphirerapids"])
def test_dependent_aesenc_chain_is_latency_bound(cpu):
    n = 6
    a = mca.analyse("vaesenc %xmm1, %xmm0, %xmm0\n" * n, cpu)
    lat = a.latency[0]
    assert lat >= 3 and all(x == lat for x in a.latency)
    p = model.predict(a, "stitch", 1)
    # the loop-carried chain: n latencies per iteration (plus a start-up cycle or so / 300)
    assert p.cycles_per_iteration == pytest.approx(n * lat, rel=0.01)
    assert p.bottleneck == "latency (dependency chain)"
    assert a.dependency_share and a.dependency_share > 0.5


@needs_mca
def test_independent_aesenc_is_bound_by_the_aes_pipes():
    regs = [f"vaesenc %xmm15, %xmm{i}, %xmm{i}\n" for i in range(12)]
    a = mca.analyse("".join(regs), "znver4")
    rthr = a.rthroughput[0]
    p = model.predict(a, "stitch", 12)
    assert p.cycles_per_iteration == pytest.approx(12 * rthr, rel=0.02)
    assert p.bottleneck.startswith("resource ")
    assert set(p.busiest_users) == {"vaesenc"}


@needs_mca
def test_json_pressure_totals_match_instruction_rows():
    a = mca.analyse("vaesenc %xmm1, %xmm0, %xmm2\nvpclmulqdq $0, %xmm1, %xmm0, %xmm3\n",
                    "znver4")
    for res, total in a.pressure.items():
        assert total == pytest.approx(sum(r.get(res, 0.0) for r in a.by_instruction), abs=0.02)
    assert a.model_name == "Zn4"


def test_missing_llvm_mca_is_said(monkeypatch, capsys):
    from vgkernels.cli import main

    monkeypatch.setenv(mca.ENV_VAR, "/nonexistent/llvm-mca")
    why = mca.missing_reason()
    assert why and "/nonexistent/llvm-mca" in why
    with pytest.raises(mca.McaMissing):
        mca.find()
    assert main(["predict", "--cpu", "znver4"]) == 2
    assert "llvm-mca" in capsys.readouterr().err


def test_missing_llvm_mca_names_the_install(monkeypatch):
    monkeypatch.delenv(mca.ENV_VAR, raising=False)
    monkeypatch.setattr(mca, "NAMES", ("llvm-mca-nonexistent-0",))
    monkeypatch.setattr(mca, "DIRS", ())
    mca._locate.cache_clear()
    try:
        why = mca.missing_reason()
        assert why and "apt-get install -y llvm-19" in why
    finally:
        mca._locate.cache_clear()


def _fake_tool(tmp_path, name: str, version: str):
    p = tmp_path / name
    p.write_text(f"#!/bin/sh\necho 'LLVM (http://llvm.org/):'\necho '  LLVM version {version}'\n")
    p.chmod(0o755)
    return p


def test_an_llvm_mca_older_than_19_is_passed_over(monkeypatch, tmp_path):
    """Debian 12's plain `llvm` package installs LLVM 14 as `llvm-mca` and `llc`: no znver4
    model.  It must read as missing (with the reason and the install), not fail later; a
    newer one found after it is used."""
    old = _fake_tool(tmp_path, "llvm-mca", "14.0.6")
    monkeypatch.delenv(mca.ENV_VAR, raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(mca, "DIRS", ())
    mca._locate.cache_clear()
    try:
        why = mca.missing_reason()
        assert why and str(old) in why and "14.0.6" in why and "apt-get install -y llvm-19" in why
        newer = tmp_path / "v19"
        newer.mkdir()
        good = _fake_tool(newer, "llvm-mca", "19.1.7")
        monkeypatch.setattr(mca, "DIRS", (newer,))
        mca._locate.cache_clear()
        assert mca.find() == mca.Tool(good, "19.1.7")
        monkeypatch.setenv(mca.ENV_VAR, str(old))
        mca._locate.cache_clear()
        assert "older than 19" in (mca.missing_reason() or "")
    finally:
        mca._locate.cache_clear()


def test_an_llc_older_than_19_is_passed_over(monkeypatch, tmp_path):
    _fake_tool(tmp_path, "llc", "14.0.6")
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(targets, "LLC_DIRS", ())
    targets.find_llc.cache_clear()
    try:
        assert targets.find_llc() is None
        good = _fake_tool(tmp_path, "llc-19", "19.1.7")
        targets.find_llc.cache_clear()
        assert targets.find_llc() == good
    finally:
        targets.find_llc.cache_clear()


def test_ticks_and_cycles_convert_both_ways():
    assert model.ticks_per_byte(0.2, core_ghz=4.0, tsc_ghz=2.0) == pytest.approx(0.1)
    assert model.cycles_per_byte(0.1, core_ghz=4.0, tsc_ghz=2.0) == pytest.approx(0.2)


# -- the CPUs -----------------------------------------------------------------------------------


@needs_llc
def test_cpu_features_come_from_llvm():
    z3, z4 = targets.cpu_features("znver3"), targets.cpu_features("znver4")
    assert {"vaes", "vpclmulqdq", "avx2"} <= z3 and "avx512f" not in z3
    assert {"avx512f", "avx512bw", "avx512vl", "vaes"} <= z4
    assert [b.name for b in targets.supported("znver3")][-1] == "vaes_avx2"
    assert "vaes_avx512" in [b.name for b in targets.supported("sapphirerapids")]
    assert not targets.supported("x86-64")
    with pytest.raises(ValueError, match="does not know"):
        targets.cpu_features("no-such-cpu")


# -- the recommendation table -------------------------------------------------------------------


def _frame() -> pd.DataFrame:
    rows = []
    for cpu, be, label, g, k, cpb in [
            ("znver4", "vaes_avx512", "default", 32, True, 0.21),
            ("znver4", "vaes_avx512", "group=16", 16, True, 0.20),
            ("znver4", "vaes_avx2", "default", 8, True, 0.40),
            ("znver3", "vaes_avx2", "default", 8, True, 0.39),
            ("znver3", "vaes_avx2", "karatsuba=False", 8, False, 0.39)]:
        for region, f in (("stitch", 1.0), ("leftover", 1.3)):
            rows.append({"cpu": cpu, "backend": be, "variant": label, "group": g,
                         "karatsuba": k, "skew": 0, "stitch_min": 2 * g if g < 32 else 32,
                         "region": region, "cycles_per_byte": cpb * f, "bottleneck": "x"})
    return pd.DataFrame(rows)


def test_recommendation_picks_the_fastest_and_round_trips(tmp_path):
    t = recommend.derive(_frame(), "19.1.7", "2026-11-30")
    assert t["schema"] == 1 and t["cpus"]["znver4"]["best"] == "vaes_avx512"
    assert recommend.variant_for(t, "znver4", "vaes_avx512") == Variant(
        group=16, karatsuba=True, skew=0, stitch_min=32)
    # a tie keeps the default
    assert t["cpus"]["znver3"]["backends"]["vaes_avx2"]["label"] == "default"
    assert t["cpus"]["znver4"]["backends"]["vaes_avx512"]["leftover_cycles_per_byte"] == \
        pytest.approx(0.26)
    # how many variants stood behind each pick, and the advice says when it was one
    assert t["cpus"]["znver4"]["backends"]["vaes_avx512"]["variants_compared"] == 2
    assert t["cpus"]["znver4"]["backends"]["vaes_avx2"]["variants_compared"] == 1
    assert "only the defaults" not in recommend.advice(t, "znver4")
    t1 = recommend.derive(_frame()[lambda d: d["variant"] == "default"], "19.1.7", "2026-11-30")
    assert "only the defaults were predicted" in recommend.advice(t1, "znver4")
    p = recommend.write(t, tmp_path / recommend.FILENAME)
    assert recommend.load(p) == json.loads(p.read_text()) == t


def test_quick_profile_sweeps_the_host_cpu_only(monkeypatch):
    """quick sweeps the variants on the host's CPU (or the first predicted, when the host is
    not among them) and predicts the defaults elsewhere; full sweeps every CPU; the notebook's
    conclusions say which CPUs had only their defaults predicted."""
    from vgkernels.predict import predictor
    from vgkernels.report import prediction as pr
    from vgkernels.report.session import get_profile

    cpus = ["znver3", "znver4"]
    quick, full = get_profile("quick"), get_profile("full")
    assert pr.sweep_cpus(full, "znver3", cpus) is None
    assert pr.sweep_cpus(quick, "znver3", cpus) == ["znver3"]
    assert pr.sweep_cpus(quick, "alderlake", cpus) == ["znver3"]
    # the cases the table builds, without compiling them
    monkeypatch.setattr(predictor, "_run_task", lambda t: [
        (i, [{"cpu": c, "backend": t.backend, "variant": label, "region": "stitch",
              "cycles_per_byte": 0.3 - 0.01 * i, "bottleneck": "x", "busiest_users": "y"}])
        for i, c, label in t.cases])
    df = predictor.table(cpus, ["vaes_avx2"], "sweep", sweep_cpus=["znver3"])
    n = len(predictor.sweep_variants(get("vaes_avx2"), "znver3"))
    assert n > 1 and (df["cpu"] == "znver3").sum() == n
    assert df[df["cpu"] == "znver4"]["variant"].tolist() == ["default"]
    assert len(predictor.table(cpus, ["vaes_avx2"], "sweep")) == 2 * n
    win = pr.winners(df)
    assert win.set_index("cpu")["variants"].to_dict() == {"znver3": n, "znver4": 1}
    lines = pr.conclusions(pd.DataFrame(), win, pd.DataFrame(), "znver3")
    (z4,) = [line for line in lines if line.startswith("**znver4**")]
    (z3,) = [line for line in lines if line.startswith("**znver3**")]
    assert "only the defaults" in z4 and "only the defaults" not in z3


def test_host_line_keeps_portable_apart():
    """portable's measured / predicted ratio (tens of times off) does not set the x86
    backends' range in the host line or the headline's worst ratio; it gets its own line."""
    from vgkernels.report import prediction as pr

    v = pd.DataFrame([
        {"backend": "portable", "variant": "default", "region": "stitch", "ratio": 70.5},
        {"backend": "vaes_avx2", "variant": "default", "region": "stitch", "ratio": 0.86},
        {"backend": "aesni_pclmul_avx", "variant": "skew=2", "region": "stitch", "ratio": 1.14},
        {"backend": "aesni_pclmul", "variant": "default", "region": "ctr", "ratio": 1.06},
    ])
    lines = pr.conclusions(v, pd.DataFrame(), pd.DataFrame(), "znver3")
    (host,) = [line for line in lines if line.startswith("On the host")]
    assert "0.86-1.14" in host and "`vaes_avx2` `default` at 0.86" in host
    assert "portable" not in host and "70.50" not in host
    (port,) = [line for line in lines if line.startswith("`portable`'s seal")]
    assert "70.50-70.50" in port
    assert pr.headline(v, pd.DataFrame())["worst_ratio"] == {
        "backend": "vaes_avx2", "variant": "default", "ratio": 0.86}
    only_portable = pr.conclusions(v[v["backend"] == "portable"], pd.DataFrame(),
                                   pd.DataFrame(), "znver3")
    assert not [line for line in only_portable if line.startswith("On the host")]


@pytest.mark.parametrize("breakage", ["schema", "kind", "best", "backend", "variant", "group"])
def test_recommendation_table_rejects_bad_data(breakage):
    t = recommend.derive(_frame(), "19.1.7", "2026-11-30")
    z4 = t["cpus"]["znver4"]
    if breakage == "schema":
        t["schema"] = 2
    elif breakage == "kind":
        t["kind"] = "vgkernels.copy_below"
    elif breakage == "best":
        z4["best"] = "portable"
    elif breakage == "backend":
        z4["backends"]["no_such"] = z4["backends"]["vaes_avx512"]
    elif breakage == "variant":
        del z4["backends"]["vaes_avx512"]["variant"]["skew"]
    else:
        z4["backends"]["vaes_avx512"]["variant"]["group"] = 5
    with pytest.raises(ValueError, match="recommendation table"):
        recommend.validate(t)


def test_report_batch_skips_notebook_07_without_llvm_mca(monkeypatch, tmp_path):
    from vgkernels.report import batch

    monkeypatch.setenv(mca.ENV_VAR, "/nonexistent/llvm-mca")
    rc = batch.main(["--profile", "tiny", "--only", "07", "--out", str(tmp_path),
                     "--no-html", "--no-progress"])
    assert rc == 0
    idx = json.loads((tmp_path / "index.json").read_text())
    (run,) = [r for r in idx["notebooks"] if r["name"] == "07_predict"]
    assert run["status"] == "skipped" and "llvm-mca" in run["error"]
    assert "skipped" in (tmp_path / "index.html").read_text()


def test_shipped_recommendations_validate_and_advise():
    """The table vgkernels predict --recommend wrote ships valid; info's advice line names the
    best backend and variant of a CPU in it, and nothing for a CPU not in it."""
    from vgkernels.predict import recommend

    table = recommend.shipped()
    assert table is not None, "vgkernels/data/predict_recommend.json is missing"
    cpu = next(iter(table["cpus"]))
    line = recommend.advice(table, cpu)
    best = table["cpus"][cpu]["best"]
    assert line and best in line and table["cpus"][cpu]["backends"][best]["label"] in line
    assert recommend.advice(table, "no-such-cpu") is None
    assert recommend.variant_for(table, cpu, best) is not None
