"""Machine and software metadata carried by every row of results."""

from __future__ import annotations

import ctypes
import functools
import platform
from typing import Any

import llvmlite
import llvmlite.binding as llvm

from .. import __version__, cpu, machine
from .driver import driver
from .peers import PeerUnavailable, cryptography_version, find_libcrypto

host_name = machine.host_name


def cpu_flags_full() -> str:
    """All flags /proc/cpuinfo lists (for the metadata file, not every row)."""
    return cpu.cpuinfo_field("flags") or ""


def libcrypto_version(path: str | None = None) -> str | None:
    """OpenSSL_version(0) of the libcrypto the OpenSSL peer would load (None if it cannot).
    Looked up each time ($VG_LIBCRYPTO may change), read once per library file."""
    try:
        return _version_of(find_libcrypto(path))
    except PeerUnavailable:
        return None


@functools.cache
def _version_of(resolved: str) -> str | None:
    try:
        lib = ctypes.CDLL(resolved)
        f = lib.OpenSSL_version
    except (OSError, AttributeError):
        return None
    f.restype, f.argtypes = ctypes.c_char_p, [ctypes.c_int]
    return f(0).decode()


def clocks(k: int = 9) -> dict[str, float | None]:
    """TSC and core clock now, in GHz: the driver's calibration and its dependent-add chain."""
    d = driver(pin=False)
    t = d.measure([], k=k)
    core = t.core_hz(d.tsc_hz)
    return {"tsc_ghz": d.tsc_hz / 1e9, "core_ghz": core / 1e9 if core else None}


def host_meta(libcrypto: str | None = None) -> dict[str, Any]:
    """Columns every row carries: the machine (vgkernels.machine), CPU flags, versions."""
    info = cpu.info()
    ident = machine.identity()
    return {
        **ident,
        "cpu_flags": ",".join(info.flags),
        "kernel_version": __version__,
        "llvmlite_version": llvmlite.__version__,
        "llvm_version": ".".join(map(str, llvm.llvm_version_info)),
        "openssl_version": libcrypto_version(libcrypto),
        "cryptography_openssl": cryptography_version(),
        "python_version": platform.python_version(),
    }
