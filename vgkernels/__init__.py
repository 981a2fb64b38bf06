"""vgkernels: AES-GCM kernels generated as LLVM IR per x86-64 backend, compiled with llvmlite.

``vgkernels.AesGcm`` is the AEAD (:mod:`vgkernels.api`); the rest, from the floor up (a module
imports only from its own floor or lower ones; README's Layout table has the detail):

- ``spec`` (the reference model), ``elf`` (the one ELF64 reader), ``cpu``, ``backends`` (the
  backend table), ``variant`` (a build's parameters and their only text, column and symbol
  forms), ``machine``, ``abi`` (the C interface), ``jit``;
- ``ir`` (IR building blocks) and ``kernels`` (the generators, generation only), then ``build``
  (compile and load), ``aot`` and ``listing``;
- ``api``, ``binding``, ``buffers``, ``dispatch`` (copy_below tables), ``selfcheck``;
- ``bench`` (the native timing driver), ``analysis``, ``ct`` (constant-time checks),
  ``predict`` (llvm-mca);
- ``report`` (one module per notebook, named like it, and the batch) and ``cli``.

Importing the package loads none of them: the names below resolve on first use.
"""

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
