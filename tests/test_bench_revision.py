"""`vgkernels bench rev`: another tree's kernels beside this tree's, paired per round."""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd
import pytest

import vgkernels
from vgkernels import abi
from vgkernels.analysis.compare import paired, round_slowness
from vgkernels.backends import usable
from vgkernels.bench import revision

TREE = Path(vgkernels.__file__).resolve().parent.parent


def _samples(base: list[float], head: list[float], **key: object) -> list[dict]:
    rows = [{**key, "side": "base", "round": r, "ns": x} for r, x in enumerate(base)]
    return rows + [{**key, "side": "head", "round": r, "ns": x} for r, x in enumerate(head)]


def test_paired_ratio_is_per_round():
    # Drift of 2x between rounds: pairing by round sees the constant 0.9, unpaired medians
    # would not (the head's rounds are not the base's).
    base = [100.0, 200.0, 100.0, 200.0, 100.0]
    head = [90.0, 180.0, 90.0, 180.0, 90.0]
    df = pd.DataFrame(_samples(base, head, n=16) + _samples([10.0, 10.0], [20.0, 20.0], n=32)
                      + [{"n": 64, "side": "base", "round": 0, "ns": 5.0}])
    tab = paired(df, ["n"]).set_index("n")
    assert tab.loc[16, "ratio"] == pytest.approx(0.9)
    assert tab.loc[16, "lo"] == pytest.approx(0.9) and tab.loc[16, "hi"] == pytest.approx(0.9)
    assert tab.loc[16, "min_ratio"] == pytest.approx(0.9)
    assert tab.loc[32, "ratio"] == pytest.approx(2.0)
    assert 64 not in tab.index  # no head sample: no pair


def test_quiet_ratio_takes_the_quieter_half_of_the_rounds():
    # rounds 0-4 quiet (head 0.95 of base), 5-9 in a slow phase (every case 1.5x slower, and
    # the head 1.05 there): the median over all rounds lies between, the quiet one is 0.95
    base = [100.0] * 5 + [150.0] * 5
    head = [95.0] * 5 + [157.5] * 5
    other = [50.0] * 5 + [75.0] * 5
    df = pd.DataFrame(_samples(base, head, n=16) + _samples(other, other, n=32))
    tab = paired(df, ["n"]).set_index("n")
    assert tab.loc[16, "quiet_ratio"] == pytest.approx(0.95)
    assert tab.loc[16, "ratio"] == pytest.approx(1.0)
    assert tab.loc[32, "quiet_ratio"] == pytest.approx(1.0)
    slow = round_slowness(df, ["n"])
    assert list(slow.round(3)) == [1.0] * 5 + [1.5] * 5


def test_paired_interval_brackets_noisy_ratio():
    base = [100.0] * 15
    head = [95.0, 105.0, 99.0, 101.0, 97.0, 103.0, 100.0, 98.0, 102.0, 96.0, 104.0, 100.0,
            99.0, 101.0, 100.0]
    t = paired(pd.DataFrame(_samples(base, head, n=1)), ["n"]).iloc[0]
    assert t["lo"] <= t["ratio"] <= t["hi"] and t["lo"] < 1.0 < t["hi"]


def _dump(ctx: int = abi.CTX_SIZE, **sigs: str) -> dict:
    s = {op: sig[2] for op, sig in abi.SIGNATURES.items()}
    return {"ctx_size": ctx, "signatures": {**s, **sigs}, "backends": {}}


def test_check_abi():
    revision.check_abi(_dump())
    with pytest.raises(ValueError, match="context 1 bytes"):
        revision.check_abi(_dump(ctx=1))
    with pytest.raises(ValueError, match="prototypes differ for seal"):
        revision.check_abi(_dump(seal="(void)"))


def test_base_that_is_not_a_revision():
    with pytest.raises(ValueError, match="no-such-rev-xyz"):
        revision.base_ir("no-such-rev-xyz", ["portable"])


def test_same_tree_both_sides(tmp_path):
    """The base from a directory (this very tree): both sides built, checked against the
    reference model by the case builder, and paired; the base's symbols carry its prefix."""
    be = "aesni_pclmul" if "aesni_pclmul" in {b.name for b in usable()} else "portable"
    dump = revision.base_ir(str(TREE), [be])
    assert dump["backends"][be]["prefix"] == f"{revision.BASE_PREFIX}_{be}"
    assert f'@"{revision.BASE_PREFIX}_{be}_seal"(' in dump["backends"][be]["ir"]
    plan = revision.Plan((be,), ("seal", "gather"), (16, 129), ("n+1",), k=3, gap_ms=0.0,
                         target_us=2.0)
    df = revision.measure(plan, dump)
    assert set(df["side"]) == {"head", "base"}
    assert len(df) == 2 * 2 * 2 * 3  # ops x sizes x sides x rounds
    tab = paired(df, ["backend", "op", "shape", "n"])
    assert len(tab) == 4 and (tab["rounds"] == 3).all() and (tab["ratio"] > 0).all()


def test_the_base_side_shares_the_heads_buffers_and_key_context():
    """A base case's buffer arguments point at the head case's buffers, and its key context
    is the head's where the base's key_init writes the same bytes; only the kernel differs.
    A base whose context differs keeps its own."""
    import ctypes

    from vgkernels.bench.cases import Builder, CaseSpec, share_buffers
    from vgkernels.bench.driver import driver as get_driver

    drv = get_driver()
    be = "aesni_pclmul" if "aesni_pclmul" in {b.name for b in usable()} else "portable"
    kern = revision.load_base(revision.base_ir(str(TREE), [be]))
    head = Builder(drv, ctx_candidates=1)
    base = revision._BaseBuilder(drv, kern, head)
    for spec in (CaseSpec("seal", 100, be), CaseSpec("gather", 100, be, "n+1"),
                 CaseSpec("open_out", 64, be)):
        h, b = head.build(spec), base.build(spec)
        assert b.slots[1:] != h.slots[1:]  # built on buffers of its own
        share_buffers(h, b)
        assert b.slots[0] != h.slots[0] and b.slots[1:] == h.slots[1:]
        assert list((ctypes.c_uint64 * len(b.slots)).from_address(b.address())) == b.slots
        assert drv.call(b) == abi.RC_OK
    # a head context with other bytes (the in-flight count, which kernels ignore)
    head2 = Builder(drv, ctx_candidates=1)
    spec = CaseSpec("seal", 64, be)
    ctypes.c_uint32.from_address(head2.ctx(spec) + abi.CTX_INFLIGHT).value = 1
    base2 = revision._BaseBuilder(drv, kern, head2)
    assert base2.ctx(spec) != head2.ctx(spec)


def test_a_declined_shape_is_skipped_and_said():
    """seal_two_slice declines 16 + rest: that pair is left out (and said), not half-measured;
    the other cases of the plan still run."""
    names = {b.name for b in usable()}
    be = next((b for b in ("aesni_pclmul", "aesni_pclmul_avx", "vaes_avx2") if b in names), None)
    if be is None:
        pytest.skip("no x86 backend with the two-slice entry on this CPU")
    dump = revision.base_ir(str(TREE), [be])
    plan = revision.Plan((be,), ("two_slice",), (64,), ("16+rest", "n+1"), k=2, gap_ms=0.0,
                         target_us=2.0)
    said: list[str] = []
    df = revision.measure(plan, dump, progress=said.append)
    assert set(df["shape"]) == {"n+1"} and set(df["side"]) == {"head", "base"}
    assert any(m.startswith(f"skipped {be} two_slice 16+rest 64") for m in said), said


def test_shift_moves_the_stream_buffers_only():
    """``--shift 5``: the text's buffers 5 bytes past their usual page offsets (a TLS payload
    after its record header), the small ones where they were; a case built so still checks
    out against the reference model."""
    from vgkernels.bench.cases import AUX_OFFSETS, IN_OFFSET, OUT_OFFSET, Builder, CaseSpec, Placer
    from vgkernels.bench.driver import driver as get_driver

    place = Placer(5)
    bufs = [place(64, role="in"), place(64, role="out"), place(16)]
    assert [b.addr % 4096 for b in bufs] == [IN_OFFSET + 5, OUT_OFFSET + 5, AUX_OFFSETS[0]]
    be = next(b.name for b in sorted(usable(), key=lambda b: -b.rank))
    case = Builder(get_driver(), shift=5).build(CaseSpec("seal", 1000, be))
    assert case.label["n"] == 1000


def test_a_shadowed_experiment_tree_is_said(tmp_path, monkeypatch):
    """An experiment copy on PYTHONPATH that this process did not import (run from a
    repository with python -m, the repository's own tree comes first) is warned about; the
    imported tree itself, or no tree, is not."""
    here = Path(revision.__file__).resolve().parents[1]
    monkeypatch.setenv("PYTHONPATH", str(here.parent))
    assert revision.shadowed_tree() is None
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    assert revision.shadowed_tree() is None  # no vgkernels/ there
    (tmp_path / "vgkernels").mkdir()
    (tmp_path / "vgkernels" / "__init__.py").write_text("")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(["", str(tmp_path)]))
    warning = revision.shadowed_tree()
    assert warning is not None and str(tmp_path / "vgkernels") in warning and str(here) in warning
