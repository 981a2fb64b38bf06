"""Host CPU features, masked by ``VG_CPU_FEATURES``, and the choice of backend."""

from __future__ import annotations

import functools
import os
import platform
from dataclasses import dataclass

import llvmlite.binding as llvm

# Our feature names (the background threads' spelling) -> LLVM's names.
FEATURES: dict[str, str] = {
    "aes": "aes",
    "pclmulqdq": "pclmul",
    "ssse3": "ssse3",
    "avx": "avx",
    "avx2": "avx2",
    "avx512f": "avx512f",
    "avx512bw": "avx512bw",
    "avx512vl": "avx512vl",
    "vaes": "vaes",
    "vpclmulqdq": "vpclmulqdq",
    "bmi1": "bmi",
    "bmi2": "bmi2",
    "adx": "adx",
}
ENV_VAR = "VG_CPU_FEATURES"


class UnknownFeature(ValueError):
    """A name in VG_CPU_FEATURES that is not one of FEATURES."""


@functools.cache
def _llvm() -> None:
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()


@functools.cache
def host_cpu_name() -> str:
    _llvm()
    return llvm.get_host_cpu_name()


@functools.cache
def host_features() -> frozenset[str]:
    """The features of FEATURES this CPU has (as LLVM reports them), unmasked."""
    _llvm()
    raw = llvm.get_host_cpu_features()
    return frozenset(name for name, ll in FEATURES.items() if raw.get(ll, False))


def parse_mask(text: str) -> frozenset[str]:
    """Parse a VG_CPU_FEATURES value: a comma list of FEATURES names, or ``none``."""
    names = [t.strip().lower() for t in text.split(",") if t.strip()]
    if not names:
        raise UnknownFeature(f"{ENV_VAR}={text!r} names no feature; known: "
                             f"{', '.join(FEATURES)} (or 'none' for the portable backend only)")
    if names == ["none"]:
        return frozenset()
    unknown = sorted(set(names) - set(FEATURES))
    if unknown:
        raise UnknownFeature(
            f"{ENV_VAR}: unknown feature(s) {', '.join(unknown)}; known: "
            f"{', '.join(FEATURES)} (or 'none')"
        )
    return frozenset(names)


def usable_features(mask: str | None = None) -> frozenset[str]:
    """Host features intersected with the mask (the argument, else ``$VG_CPU_FEATURES``)."""
    if mask is None:
        mask = os.environ.get(ENV_VAR)
    feats = host_features()
    if mask is None or mask.strip() == "":
        return feats
    return feats & parse_mask(mask)


@dataclass(frozen=True)
class CpuInfo:
    model: str
    llvm_cpu: str
    flags: tuple[str, ...]
    usable: tuple[str, ...]


def cpuinfo_field(name: str) -> str | None:
    """The first value of a /proc/cpuinfo field ("model name", "flags"), None if absent."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith(name):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def cpu_model() -> str:
    return cpuinfo_field("model name") or platform.processor() or "unknown"


def info(mask: str | None = None) -> CpuInfo:
    return CpuInfo(
        model=cpu_model(),
        llvm_cpu=host_cpu_name(),
        flags=tuple(sorted(host_features())),
        usable=tuple(sorted(usable_features(mask))),
    )
