"""`vgkernels compare A B`: ratios, spreads and significance on runs with a known answer, and
data folders it cannot read (unknown schema, garbage) refused with the file named."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from vgkernels.analysis import compare as cmp
from vgkernels.bench import store

ROOT = Path(__file__).resolve().parents[1]


def run(seed: int, scale: dict[int, float], noise: float = 0.005, k: int = 21
        ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """A synthetic run: seal at three sizes, ns = base * scale[size] * (1 + noise)."""
    rng = np.random.default_rng(seed)
    rows, samples = [], []
    for n, base in ((16, 30.0), (1024, 100.0), (16384, 1000.0)):
        ns = base * scale.get(n, 1.0) * (1 + noise * rng.standard_normal(k))
        lab = {"impl": "vgkernels", "backend": "b", "variant": "v", "op": "seal", "shape": "one",
               "pieces": 1, "aligned": True, "n": n, "bytes": n, "key_bytes": 16,
               "aad_bytes": 13}
        q = np.quantile(ns, [0.25, 0.5, 0.75])
        rows.append({**lab, "min_ns": ns.min(), "median_ns": q[1],
                     "spread": (q[2] - q[0]) / q[1], "host": f"h{seed}"})
        samples += [{**lab, "ns": x} for x in ns]
    return pd.DataFrame(rows), pd.DataFrame(samples)


def test_detects_a_real_change_and_ignores_noise():
    a, a_s = run(1, {})
    b, b_s = run(2, {1024: 0.8, 16384: 1.10})
    t = cmp.compare(a, b, a_s, b_s).set_index("bytes")
    assert t.loc[1024, "change"] == "faster" and t.loc[1024, "ratio"] == pytest.approx(0.8, 0.02)
    assert t.loc[16384, "change"] == "slower"
    assert t.loc[16, "change"] == "same"
    s = cmp.summary(t.reset_index())
    assert (s["faster"], s["slower"], s["same"], s["cases"]) == (1, 1, 1, 3)


def test_small_change_below_min_change_is_same():
    a, a_s = run(1, {}, noise=0.0005, k=41)
    b, b_s = run(2, {1024: 1.01}, noise=0.0005, k=41)
    t = cmp.compare(a, b, a_s, b_s, min_change=0.02).set_index("bytes")
    assert t.loc[1024, "p"] < 0.01  # the samples do differ ...
    assert t.loc[1024, "change"] == "same"  # ... by less than is worth reporting


def test_without_samples_the_spread_decides():
    a, _ = run(1, {}, noise=0.05)
    b, _ = run(2, {1024: 1.03, 16384: 1.5}, noise=0.05)
    t = cmp.compare(a, b).set_index("bytes")
    assert t["p"].isna().all()
    assert t.loc[16384, "change"] == "slower" and t.loc[1024, "change"] == "same"


def save_run(d: Path, seed: int, scale: dict[int, float]) -> None:
    s, smp = run(seed, scale)
    store.save(s, smp, {"sweep": "synthetic"}, d, f"sizes-{seed}")


def test_cli_on_two_folders(tmp_path):
    save_run(tmp_path / "a", 1, {})
    save_run(tmp_path / "b", 2, {1024: 0.7})
    r = subprocess.run([sys.executable, "-m", "vgkernels", "compare", str(tmp_path / "a"),
                        str(tmp_path / "b")], capture_output=True, text=True, cwd=ROOT,
                       env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "faster" in r.stdout and "3 cases in common" in r.stdout and "1 faster" in r.stdout


@pytest.mark.parametrize("damage", ["newer_schema", "garbage_meta", "garbage_parquet", "empty"])
def test_unreadable_folder_is_one_clear_error(tmp_path, damage):
    save_run(tmp_path / "a", 1, {})
    save_run(tmp_path / "b", 2, {})
    meta = next((tmp_path / "b").glob("*-meta.json"))
    if damage == "newer_schema":
        meta.write_text(json.dumps({**json.loads(meta.read_text()), "schema": 99}))
    elif damage == "garbage_meta":
        meta.write_text("{not json")
    elif damage == "garbage_parquet":
        for f in (tmp_path / "b").glob("*.parquet"):
            f.write_bytes(os.urandom(100))
        for f in (tmp_path / "b").glob("*.csv"):
            f.unlink()
    else:
        for f in (tmp_path / "b").iterdir():
            f.unlink()
    r = subprocess.run([sys.executable, "-m", "vgkernels", "compare", str(tmp_path / "a"),
                        str(tmp_path / "b")], capture_output=True, text=True, cwd=ROOT,
                       env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=120)
    assert r.returncode == 2
    assert "Traceback" not in r.stderr
    where = str(tmp_path / "b") if damage == "empty" else str(tmp_path / "b" / "sizes-2")
    assert where in r.stderr, r.stderr


# -- the same backend across hosts (notebook 09's data) ----------------------------------------

def test_host_rows_round_trip_and_merge(tmp_path):
    import warnings

    from vgkernels.report import across_hosts

    a, _ = run(1, {})
    for col, val in (("cpu_model", "CPU A"), ("cpu_vendor", "AuthenticAMD"), ("cpu_family", 25),
                     ("cpu_model_number", 1), ("llvm_cpu", "znver3"), ("hypervisor", "KVM")):
        a[col] = val
    report = tmp_path / "2026-11-30-h1-znver3"
    store.save(a.assign(impl="vgkernels"), None, {}, report / "data", "peers-1")
    path = across_hosts.save_host(report, tmp_path / "hosts")
    assert path == tmp_path / "hosts" / report.name / "seal.csv"
    b = pd.read_csv(path).assign(run="other", cpu_family=26, llvm_cpu="znver5",
                                 min_ns=lambda d: d["min_ns"] / 2)
    (tmp_path / "hosts" / "other").mkdir()
    b.to_csv(tmp_path / "hosts" / "other" / "seal.csv", index=False)
    (tmp_path / "hosts" / "broken").mkdir()
    (tmp_path / "hosts" / "broken" / "seal.csv").write_text("a,b\n1,2\n")
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        kept = across_hosts.load_hosts(tmp_path / "hosts")
    assert any("broken/seal.csv: no column(s)" in str(x.message) for x in w)
    df = across_hosts.merged(kept, pd.DataFrame())
    assert df["machine"].nunique() == 2
    t = across_hosts.table(df)
    assert len(t) == 3 and t.shape[1] == 4
    lines = across_hosts.conclusions(df)
    assert "2 machine(s)" in lines[0] and "2.00x slower" in lines[1]
