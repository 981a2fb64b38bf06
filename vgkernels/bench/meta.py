"""Machine and software metadata carried by every row of results."""

from __future__ import annotations

import ctypes
import functools
import platform
import re
import socket
from typing import Any

import llvmlite
import llvmlite.binding as llvm

from .. import __version__, cpu


def host_name() -> str:
    """The host name, safe as a directory name."""
    return re.sub(r"[^A-Za-z0-9_.-]", "_", socket.gethostname() or "host")


def cpu_flags_full() -> str:
    """All flags /proc/cpuinfo lists (for the metadata file, not every row)."""
    return cpu.cpuinfo_field("flags") or ""


@functools.cache
def libcrypto_version(path: str | None = None) -> str | None:
    """OpenSSL_version(0) of the libcrypto the OpenSSL peer would load (None if it cannot)."""
    from .peers import PeerUnavailable, find_libcrypto

    try:
        lib = ctypes.CDLL(find_libcrypto(path))
        f = lib.OpenSSL_version
    except (OSError, AttributeError, PeerUnavailable):
        return None
    f.restype, f.argtypes = ctypes.c_char_p, [ctypes.c_int]
    return f(0).decode()


def host_meta(libcrypto: str | None = None) -> dict[str, Any]:
    """Columns every row carries: host, CPU, versions."""
    info = cpu.info()
    from .peers import cryptography_version

    return {
        "host": host_name(),
        "cpu_model": info.model,
        "cpu_flags": ",".join(info.flags),
        "llvm_cpu": info.llvm_cpu,
        "kernel_version": __version__,
        "llvmlite_version": llvmlite.__version__,
        "llvm_version": ".".join(map(str, llvm.llvm_version_info)),
        "openssl_version": libcrypto_version(libcrypto),
        "cryptography_openssl": cryptography_version(),
        "python_version": platform.python_version(),
    }
