"""copy_below tables per CPU: the lookup order (user table for this CPU, shipped table for this
CPU, the nearest shipped CPU, the backend default), what AesGcm and `vgkernels info` show, and
bad files: a clear warning naming the file and the safe fallback, never a traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import BY_NAME, ref

from vgkernels import __version__, dispatch, machine
from vgkernels.api import AesGcm

ROOT = Path(__file__).resolve().parents[1]
HERE = {"vendor": "AuthenticAMD", "family": 25, "model": 1, "llvm_cpu": "znver3",
        "model_name": "AMD EPYC 7B13"}


def table(cpu: dict, thresholds: dict[str, tuple[int | None, int | None]], host: str = "h"):
    bes = {be: {"aligned": a, "unaligned": u, "measured": {"sizes": [17, 65537]}}
           for be, (a, u) in thresholds.items()}
    return dispatch.document(bes, cpu, host=host, date="2026-11-30T00:00:00Z")


def cpu(**kw) -> dict:
    return {**HERE, **kw}


def test_lookup_order():
    be = BY_NAME["vaes_avx2"]
    user = table(HERE, {"vaes_avx2": (1, 2)})
    same = table(HERE, {"vaes_avx2": (3, 4), "aesni_pclmul": (5, 6)})
    near = table(cpu(model=17, llvm_cpu="znver4"), {"vaes_avx2": (7, 8), "portable": (9, 9)})
    far = table(cpu(family=26, model=2, llvm_cpu="znver5"), {"vaes_avx2": (10, 11)})
    intel = table(cpu(vendor="GenuineIntel", family=6, model=143, llvm_cpu="sapphirerapids"),
                  {"vaes_avx2": (12, 13), "aesni_pclmul_avx": (14, 15)})
    tabs = [("user", "u.json", user), ("shipped", "s.json", same), ("shipped", "n.json", near),
            ("shipped", "f.json", far), ("shipped", "i.json", intel)]
    t = dispatch.lookup(be, HERE, tabs)
    assert (tuple(t), t.source) == ((1, 2), "user") and "u.json" in t.detail
    t = dispatch.lookup(be, HERE, tabs[1:])
    assert (tuple(t), t.source) == ((3, 4), "shipped") and "this CPU" in t.detail
    t = dispatch.lookup(be, HERE, tabs[2:])
    assert (tuple(t), t.source) == ((7, 8), "nearest") and "n.json" in t.detail
    t = dispatch.lookup(be, HERE, tabs[3:])
    assert (tuple(t), t.source) == ((10, 11), "nearest")
    # another vendor's table is never "near": the backend default applies
    t = dispatch.lookup(be, HERE, tabs[4:])
    assert (tuple(t), t.source) == (be.copy_below, "default")
    # a table that did not measure this backend is passed over
    t = dispatch.lookup(BY_NAME["aesni_pclmul_avx"], HERE, tabs[:4])
    assert t.source == "default"
    # a user table for another CPU is not used, not even as "nearest"
    t = dispatch.lookup(BY_NAME["portable"], HERE, [("user", "x.json", near)])
    assert t.source == "default"
    # null: the gather never caught up: copy below the largest size measured + 1
    nul = table(HERE, {"vaes_avx2": (None, 300)})
    assert tuple(dispatch.lookup(be, HERE, [("shipped", "z.json", nul)])) == (65538, 300)


def test_distance_prefers_family_then_llvm_name_then_model():
    d = dispatch.distance
    assert d(HERE, HERE) == (0, 0, 0, 0)
    assert d(HERE, cpu(model=17, llvm_cpu="znver4")) < d(HERE, cpu(family=26, llvm_cpu="znver3"))
    assert d(HERE, cpu(model=8)) < d(HERE, cpu(model=17))
    assert d(HERE, cpu(vendor="GenuineIntel")) is None


@pytest.fixture
def user_dir(tmp_path, monkeypatch):
    monkeypatch.setenv(dispatch.ENV_DIR, str(tmp_path))
    dispatch.reload()
    dispatch._warned.clear()
    yield tmp_path / "copy_below"
    dispatch.reload()


def test_install_then_aesgcm_uses_it(user_dir, backend):
    here = machine.cpu_key()
    path = dispatch.install(table(here, {backend: (123, 456)}))
    assert path.parent == user_dir and path.name == dispatch.file_name(here)
    a = AesGcm(bytes(16), backend=backend)
    assert tuple(a.copy_below) == (123, 456) and a.copy_below.source == "user"
    assert str(path) in a.copy_below.detail
    pt = bytes(range(100))
    assert a.encrypt(b"n" * 12, [pt[:50], pt[50:]], None) == ref(bytes(16), b"n" * 12, pt)


@pytest.mark.parametrize("content", ["", "{", "[]", '{"kind": "other"}', "not json at all",
                                     "wrong_version", "bad_value", "no_cpu"])
def test_bad_user_file_warns_and_falls_back(user_dir, content):
    user_dir.mkdir(parents=True)
    here = machine.cpu_key()
    good = table(here, {"portable": (1, 1)})
    if content == "wrong_version":
        content = json.dumps({**good, "package_version": "0.0.1"})
    elif content == "bad_value":
        bad = json.loads(json.dumps(good))
        bad["backends"]["portable"]["aligned"] = -5
        content = json.dumps(bad)
    elif content == "no_cpu":
        content = json.dumps({k: v for k, v in good.items() if k != "cpu"})
    f = user_dir / dispatch.file_name(here)
    f.write_text(content)
    with pytest.warns(RuntimeWarning, match=f"copy_below table skipped: {f}"):
        a = AesGcm(bytes(16), backend="portable")
    assert a.copy_below.source != "user"
    pt = bytes(range(40))
    assert a.encrypt(b"n" * 12, [pt[:7], pt[7:]], b"a") == ref(bytes(16), b"n" * 12, pt, b"a")


def test_validate_messages():
    good = table(HERE, {"portable": (1, 2)})
    dispatch.validate(good, "g")
    with pytest.raises(dispatch.TableError, match="^f.json: measured with vgkernels 9.9"):
        dispatch.validate({**good, "package_version": "9.9"}, "f.json")
    with pytest.raises(dispatch.TableError, match="schema 2; this version reads"):
        dispatch.validate({**good, "schema": 2}, "f.json")
    assert good["package_version"] == __version__


def test_shipped_tables_are_valid_and_name_their_cpu():
    files = dispatch.shipped_files()
    assert files, "no copy_below table ships with the package"
    for name, text in files:
        doc = json.loads(text)
        dispatch.validate(doc, name)
        assert Path(name).name == dispatch.file_name(doc["cpu"])
        assert doc["host"] and doc["date"]


def test_info_prints_thresholds_and_sources():
    env = {k: v for k, v in os.environ.items() if k not in ("VG_CPU_FEATURES", "VG_BACKEND")}
    r = subprocess.run([sys.executable, "-m", "vgkernels", "info", "--no-check"],
                       capture_output=True, text=True, env={**env, "PYTHONPATH": str(ROOT)},
                       cwd=ROOT, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "copy_below (aligned, unaligned)" in r.stdout
    for be in BY_NAME:
        line = next(x for x in r.stdout.splitlines() if x.strip().startswith(be + " ") and "[" in x)
        assert any(f"[{s}]" in line for s in ("user", "shipped", "nearest", "default")), line


@pytest.mark.parametrize(("env", "msg"), [
    ({"VG_BACKEND": "nope"}, "VG_BACKEND=nope: unknown backend 'nope'"),
    ({"VG_CPU_FEATURES": "aes,bogus"}, "unknown feature(s) bogus"),
    ({"VG_CPU_FEATURES": ","}, "names no feature"),
])
def test_info_bad_environment_is_one_error_line(env, msg):
    base = {k: v for k, v in os.environ.items() if k not in ("VG_CPU_FEATURES", "VG_BACKEND")}
    r = subprocess.run([sys.executable, "-m", "vgkernels", "info", "--no-check"],
                       capture_output=True, text=True, cwd=ROOT, timeout=120,
                       env={**base, **env, "PYTHONPATH": str(ROOT)})
    assert r.returncode == 2
    assert "Traceback" not in r.stderr and "Traceback" not in r.stdout
    assert msg in r.stderr
    assert "backends:" in r.stdout  # the table is still printed
