"""The kernel cache loads machine code, so it trusts only what it wrote: damaged, foreign,
truncated or misplaced objects are removed and rebuilt with a warning; a directory or file
other users can write is refused; concurrent cold builds from threads and processes agree."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
import warnings
from pathlib import Path

import pytest

from vgkernels import jit

ROOT = Path(__file__).resolve().parents[1]
# a small module: the cache's behaviour does not depend on what it holds
IR = """
define i64 @vg_cache_probe(i64 %x) {
  %y = mul i64 %x, 3
  ret i64 %y
}
"""
FEATURES = "+sse2"


@pytest.fixture
def cache(tmp_path, monkeypatch):
    d = tmp_path / "cache"
    monkeypatch.setenv("VG_CACHE_DIR", str(d))
    jit._warned.clear()
    return d


def build(name: str = "probe", ir: str = IR) -> jit.Library:
    import ctypes

    lib = jit.compile_ir(name, ir, FEATURES)
    f = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_int64)(lib.address("vg_cache_probe"))
    assert f(14) == 42
    return lib


def the_file(d: Path) -> Path:
    (f,) = [p for p in d.iterdir() if p.suffix == ".vgko"]
    return f


def test_cold_then_warm(cache):
    assert not build().from_cache
    assert build().from_cache
    assert os.stat(cache).st_mode & 0o077 == 0  # made private


@pytest.mark.parametrize("damage", ["empty", "truncated", "garbage", "flipped", "raw_object",
                                    "other_key"])
def test_damaged_object_is_rebuilt(cache, damage):
    first = build()
    f = the_file(cache)
    data = f.read_bytes()
    if damage == "empty":
        f.write_bytes(b"")
    elif damage == "truncated":
        f.write_bytes(data[: len(data) // 2])
    elif damage == "garbage":
        f.write_bytes(os.urandom(len(data)))
    elif damage == "flipped":  # one bit of the machine code
        f.write_bytes(data[:-40] + bytes([data[-40] ^ 1]) + data[-39:])
    elif damage == "raw_object":  # a valid object file, without the header
        f.write_bytes(first.obj)
    else:  # another module's valid cache file under this name
        jit.compile_ir("other", IR.replace("3", "5").replace("vg_cache_probe", "vg_other"),
                       FEATURES)
        src = [p for p in cache.iterdir() if p.name.startswith("other-")][0]
        f.write_bytes(src.read_bytes())
    with pytest.warns(jit.CacheWarning, match=f"{f.name} rejected: .*removed and rebuilt"):
        lib = build()
    assert not lib.from_cache
    assert build().from_cache  # healed


def test_unsafe_directory_or_file_is_not_loaded(cache):
    build()
    f = the_file(cache)
    os.chmod(f, 0o666)  # any user could replace the code
    with pytest.warns(jit.CacheWarning, match="writable by other users"):
        assert not build().from_cache
    os.chmod(cache, 0o777)
    jit._warned.clear()
    with pytest.warns(jit.CacheWarning, match="not used: writable by other users"):
        lib = build()
    assert not lib.from_cache
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        os.chmod(cache, 0o700)
        build()


def test_symlink_is_not_followed(cache, tmp_path):
    build()
    f = the_file(cache)
    target = tmp_path / "elsewhere.o"
    target.write_bytes(f.read_bytes())
    f.unlink()
    f.symlink_to(target)
    with pytest.warns(jit.CacheWarning, match="symbolic link"):
        assert not build().from_cache


def test_concurrent_cold_builds_threads(cache):
    errors: list[BaseException] = []

    def go():
        try:
            build()
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    ts = [threading.Thread(target=go) for _ in range(6)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert errors == []
    assert len([p for p in cache.iterdir() if p.suffix == ".vgko"]) == 1
    assert not [p for p in cache.iterdir() if p.suffix == ".tmp"]


def test_concurrent_cold_builds_processes(cache):
    code = textwrap.dedent(f"""
        import ctypes, warnings
        warnings.simplefilter("error")
        from vgkernels import jit
        lib = jit.compile_ir("probe", {IR!r}, {FEATURES!r})
        f = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_int64)(lib.address("vg_cache_probe"))
        assert f(14) == 42
        print("ok")
    """)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    procs = [subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(4)]
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0 and out.strip() == "ok", err
    assert len([p for p in cache.iterdir() if p.suffix == ".vgko"]) == 1
