"""CPU features and their masking by VG_CPU_FEATURES: parse_mask, availability() reasons,
usable() / choose(), in-process through the `mask` argument and the environment, and in a
child process with the variable set."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import BACKEND_NAMES, BY_NAME

from vgkernels import cpu
from vgkernels.backends import BACKENDS, availability, choose, usable

ROOT = Path(__file__).resolve().parents[1]


def run_py(code: str, **env: str) -> subprocess.CompletedProcess:
    e = {k: v for k, v in os.environ.items() if k not in ("VG_CPU_FEATURES", "VG_BACKEND")}
    e.update(env)
    e["PYTHONPATH"] = os.pathsep.join([str(ROOT), e.get("PYTHONPATH", "")])
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=e,
                          timeout=120, cwd=ROOT)


@pytest.fixture(autouse=True)
def clean_env(monkeypatch):
    monkeypatch.delenv("VG_CPU_FEATURES", raising=False)
    monkeypatch.delenv("VG_BACKEND", raising=False)


# -- parse_mask -----------------------------------------------------------------------------------


def test_parse_mask():
    assert cpu.parse_mask("none") == frozenset()
    assert cpu.parse_mask(" NONE ") == frozenset()
    assert cpu.parse_mask("aes, AVX ,pclmulqdq,") == {"aes", "avx", "pclmulqdq"}
    assert cpu.parse_mask(",".join(cpu.FEATURES)) == set(cpu.FEATURES)
    for empty in ("", ",", " , ,"):  # an empty list is an error, not "portable only"
        with pytest.raises(cpu.UnknownFeature, match="names no feature"):
            cpu.parse_mask(empty)


@pytest.mark.parametrize("text", ["bogus", "aes,bogus", "avx512", "aes,none", "pclmul"])
def test_unknown_feature(text):
    with pytest.raises(cpu.UnknownFeature) as exc:
        cpu.parse_mask(text)
    assert isinstance(exc.value, ValueError)
    msg = str(exc.value)
    bad = sorted(set(t.strip() for t in text.split(",")) - set(cpu.FEATURES))
    assert msg.startswith(f"VG_CPU_FEATURES: unknown feature(s) {', '.join(bad)}; known: ")
    for name in cpu.FEATURES:
        assert name in msg.split("known: ", 1)[1], name
    assert "(or 'none')" in msg


def test_host_features_match_proc_cpuinfo():
    """LLVM's view of the host agrees with the kernel's flags (same names in /proc/cpuinfo)."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        pytest.skip("no /proc/cpuinfo")
    flags = set()
    for line in text.splitlines():
        if line.startswith("flags"):
            flags = set(line.split(":", 1)[1].split())
            break
    if not flags:
        pytest.skip("no flags line in /proc/cpuinfo")
    assert cpu.host_features() == {f for f in cpu.FEATURES if f in flags}


# -- availability / usable / choose with a mask ---------------------------------------------------


def test_mask_none_gives_portable_only():
    assert [b.name for b in usable("none")] == ["portable"]
    assert choose(mask="none").name == "portable"
    av = availability("none")
    assert av["portable"] is None
    for b in BACKENDS[1:]:
        if b.missing(cpu.host_features()):
            assert av[b.name].startswith("CPU lacks "), av[b.name]
        else:
            assert av[b.name] == (f"masked off by VG_CPU_FEATURES: needs "
                                  f"{', '.join(sorted(b.features))}")


@pytest.mark.parametrize("name", BACKEND_NAMES)
def test_mask_exactly_one_backend_features(name):
    """Masking to a backend's own features makes it the best usable; the better ones are
    "masked off" with exactly the features they miss."""
    be = BY_NAME[name]
    host_missing = be.missing(cpu.host_features())
    if host_missing:
        pytest.skip(f"backend {name} unavailable: CPU lacks {', '.join(sorted(host_missing))}")
    mask = ",".join(sorted(be.features)) or "none"
    assert choose(mask=mask).name == name
    av = availability(mask)
    for b in BACKENDS:
        if b.features <= be.features:
            assert av[b.name] is None, b.name
        elif not b.missing(cpu.host_features()):
            need = ", ".join(sorted(b.features - be.features))
            assert av[b.name] == f"masked off by VG_CPU_FEATURES: needs {need}", b.name
    for b in BACKENDS:
        if av[b.name] is not None:
            with pytest.raises(RuntimeError, match=f"backend {b.name} is not usable here: "):
                choose(b.name, mask=mask)


def test_mask_is_intersected_with_host():
    host = cpu.host_features()
    assert cpu.usable_features(",".join(cpu.FEATURES)) == host
    assert cpu.usable_features("aes,avx") == host & {"aes", "avx"}
    assert cpu.usable_features("") == host
    assert cpu.usable_features("   ") == host


def test_choose_named_and_unknown():
    for name, why in availability().items():
        if why is None:
            assert choose(name).name == name
    with pytest.raises(ValueError, match="unknown backend 'nope'; known: " + ", ".join(
            BACKEND_NAMES)):
        choose("nope")
    # the reason comes from the table: "CPU lacks ..." on a lesser CPU, else "masked off"
    why = availability("none")["vaes_avx512"]
    assert why is not None
    lacks = not BY_NAME["vaes_avx512"].features <= cpu.host_features()
    expect = "CPU lacks " if lacks else "masked off by VG_CPU_FEATURES: needs "
    assert why.startswith(expect), why
    with pytest.raises(RuntimeError, match=re.escape(f"backend vaes_avx512 is not usable here: "
                                                     f"{why}")):
        choose("vaes_avx512", mask="none")


def test_choose_without_mask_takes_highest_rank():
    best = max(usable(), key=lambda b: b.rank)
    assert choose().name == best.name
    ranks = [b.rank for b in BACKENDS]
    assert len(set(ranks)) == len(ranks), "two backends share a rank"


# -- the environment variables, in process --------------------------------------------------------


def test_env_mask_in_process(monkeypatch):
    from vgkernels.api import AesGcm

    monkeypatch.setenv("VG_CPU_FEATURES", "none")
    assert choose().name == "portable"
    assert [b.name for b in usable()] == ["portable"]
    assert AesGcm(bytes(16)).backend.name == "portable"
    with pytest.raises(RuntimeError, match="masked off by VG_CPU_FEATURES"):
        AesGcm(bytes(16), backend="aesni_pclmul")
    # the argument wins over the environment
    host_best = max((b for b in BACKENDS if not b.missing(cpu.host_features())),
                    key=lambda b: b.rank)
    assert choose(mask=",".join(cpu.FEATURES)).name == host_best.name
    monkeypatch.setenv("VG_CPU_FEATURES", "aes,bogus")
    with pytest.raises(cpu.UnknownFeature, match="bogus"):
        availability()


def test_env_backend_in_process(monkeypatch):
    monkeypatch.setenv("VG_BACKEND", "portable")
    assert choose().name == "portable"
    monkeypatch.setenv("VG_BACKEND", "nope")
    with pytest.raises(ValueError, match="unknown backend 'nope'"):
        choose()


# -- a child process with VG_CPU_FEATURES set -----------------------------------------------------

CHOOSE = "from vgkernels.backends import choose; print(choose().name)"


def test_env_mask_in_child_process():
    r = run_py(CHOOSE, VG_CPU_FEATURES="none")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "portable"
    code = ("from vgkernels.api import AesGcm; from vgkernels import spec\n"
            "a = AesGcm(bytes(16)); ct, tag = spec.seal(bytes(16), bytes(12), b'abc', b'')\n"
            "assert a.encrypt(bytes(12), b'abc', None) == ct + tag\n"
            "print(a.backend.name)")
    r = run_py(code, VG_CPU_FEATURES="none")
    assert (r.returncode, r.stdout.strip()) == (0, "portable"), r.stderr
    r = run_py(CHOOSE)
    assert r.stdout.strip() == choose().name, r.stderr
    if availability()["aesni_pclmul_avx"] is None:
        r = run_py(CHOOSE, VG_CPU_FEATURES="aes,pclmulqdq,ssse3,avx,avx2")
        assert r.stdout.strip() == "aesni_pclmul_avx", r.stderr


def test_unknown_feature_in_child_process():
    r = run_py(CHOOSE, VG_CPU_FEATURES="aes,sse9")
    assert r.returncode != 0
    assert "UnknownFeature" in r.stderr and "unknown feature(s) sse9; known: aes" in r.stderr


def test_backend_fixture_skips_masked_backends():
    """The `backend` fixture under VG_CPU_FEATURES=none: portable runs, every other backend is
    SKIPPED with its "masked off" reason (not silently passed)."""
    r = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", "-p", "no:xdist",
         "-p", "no:randomly", f"{Path(__file__).resolve()}::test_backend_fixture_probe"],
        capture_output=True, text=True, timeout=300, cwd=ROOT,
        env={**{k: v for k, v in os.environ.items() if not k.startswith("PYTEST")},
             "VG_CPU_FEATURES": "none"})
    out = r.stdout
    assert r.returncode == 0, out[-3000:] + r.stderr[-2000:]
    assert f"1 passed, {len(BACKEND_NAMES) - 1} skipped" in out, out[-3000:]
    # each reason as the table gives it on this CPU: "CPU lacks" or "masked off"
    whys = availability("none")
    for name in BACKEND_NAMES[1:]:
        assert f"backend {name} unavailable: {whys[name]}" in out, (name, whys[name])


def test_backend_fixture_probe(backend):
    """Run by the test above (and here): a backend the fixture hands out is usable."""
    assert availability()[backend] is None
    assert choose(backend).name == backend
