"""vgkernels: AES-GCM kernels generated as LLVM IR per x86-64 backend, compiled with llvmlite."""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["AesGcm", "Decryptor", "Encryptor", "InvalidTag", "Variant", "__version__"]


def __getattr__(name: str):  # lazy: `import vgkernels` must not compile anything
    if name in ("AesGcm", "InvalidTag", "Encryptor", "Decryptor"):
        from . import api

        return getattr(api, name)
    if name == "Variant":
        from .variant import Variant

        return Variant
    raise AttributeError(f"module 'vgkernels' has no attribute {name!r}")
