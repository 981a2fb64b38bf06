"""vgkernels.ct.timing: Welch's t on synthetic samples with known answers, and the whole
machinery (native driver, kernels, controls) on a tiny sample count for the shape of its result
(no timed assertion: the machine may be busy)."""

from __future__ import annotations

import math
import os

import numpy as np
import pytest
from scipy import stats

from vgkernels.backends import usable
from vgkernels.bench.driver import driver
from vgkernels.ct import cli, timing


def test_welch_t_known_answer():
    # means 2.5 and 5, variances 5/3 and 20/3, n = 4: t = -2.5 / sqrt(25/12) = -sqrt(3)
    assert timing.welch_t([1, 2, 3, 4], [2, 4, 6, 8]) == pytest.approx(-math.sqrt(3))
    assert math.isnan(timing.welch_t([1], [1, 2]))
    assert math.isnan(timing.welch_t([3, 3], [3, 3]))


def test_welch_t_agrees_with_scipy():
    rng = np.random.default_rng(7)
    a, b = rng.normal(100, 3, 500), rng.normal(100.5, 9, 300)
    want = stats.ttest_ind(a, b, equal_var=False).statistic
    assert timing.welch_t(a, b) == pytest.approx(want, rel=1e-12)


def _outlier_classes(shift: float, n: int = 4000, seed: int = 1):
    """Two classes of n samples, N(100, 1) and N(100 + shift, 1), each with exactly 1% huge
    outliers (what preemption does to a shared machine's samples)."""
    rng = np.random.default_rng(seed)
    cls = np.repeat([0, 1], n)
    ticks = rng.normal(100, 1, 2 * n) + shift * cls
    for c in (0, 1):
        idx = rng.choice(np.flatnonzero(cls == c), n // 100, replace=False)
        ticks[idx] = 1e6
    return ticks, cls


def test_cropping_finds_a_shift_the_outliers_hide():
    ticks, cls = _outlier_classes(shift=1.0)
    ts = timing.cropped_t(ticks, cls)
    assert abs(ts[1.0]) < timing.THRESHOLD  # the raw samples: the tail's variance wins
    t, crop = timing.max_abs_t(ts)
    assert crop < 1.0 and t < -20  # class 0 faster: negative, and far beyond the threshold


def test_no_shift_no_leak():
    ticks, cls = _outlier_classes(shift=0.0)
    t, _ = timing.max_abs_t(timing.cropped_t(ticks, cls))
    assert abs(t) < timing.THRESHOLD


def test_max_abs_t_keeps_the_sign_and_skips_nan():
    assert timing.max_abs_t({1.0: 2.0, 0.9: -7.0, 0.5: math.nan}) == (-7.0, 0.9)
    t, q = timing.max_abs_t({1.0: math.nan})
    assert math.isnan(t) and math.isnan(q)


@pytest.fixture
def _keep_affinity():
    before = os.sched_getaffinity(0)
    yield
    os.sched_setaffinity(0, before)


@pytest.mark.usefixtures("_keep_affinity")
def test_machinery_shape_on_a_tiny_sample():
    bes = usable()
    if not bes:
        pytest.skip("no usable backend")
    best = max(bes, key=lambda b: b.rank).name
    rs = timing.run(300, batch=2, backends=[best], drv=driver(None, False))
    assert [(r.impl, r.backend, r.op) for r in rs] == (
        [("kernel", best, op) for op in timing.OPS]
        + [("control", "controls", op) for op in timing.OPS])
    for r in rs:
        assert r.samples == 300 and r.samples0 + r.samples1 == 300 and min(r.samples0,
                                                                           r.samples1) > 100
        assert r.batch == 2 and r.median0 > 0 and r.median1 > 0
        assert r.crop in timing.CROPS and not math.isnan(r.t) and abs(r.t) >= abs(r.t_raw)
        assert (r.class0, r.class1) == timing.CLASSES[r.op]
        assert r.row()["leak"] == (abs(r.t) > timing.THRESHOLD)


def test_cli_verdicts():
    def res(impl: str, op: str, t: float) -> timing.Result:
        return timing.Result(impl, "x", op, "a", "b", 10, 5, 5, 1, 1.0, 1.0, t, 1.0, t, 0.0)
    assert cli.expected(res("kernel", "seal", 1.0)) and not cli.expected(res("kernel", "open", 9))
    assert cli.expected(res("control", "open", 50)) and not cli.expected(res("control", "open", 1))
    assert cli.expected(res("control", "key_init", 1.0))  # the L1-resident S-box need not show
