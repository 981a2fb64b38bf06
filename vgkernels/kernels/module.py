"""One LLVM module per (backend, variant): every generator in order, as IR text.

Compiling and loading it is `vgkernels.build`'s job; this package only generates."""

from __future__ import annotations

import re

from llvmlite import ir

from ..backends import Backend
from ..variant import Variant, symbol_prefix
from . import bulk, entries, gather, keysetup, short, stream
from .common import Params


def generate(backend: Backend, variant: Variant | None = None, prefix: str | None = None,
             cpu: str | None = None) -> tuple[str, str]:
    """(prefix, IR text) of a backend's kernels, its defaults those for LLVM CPU ``cpu``
    (None: the CPU the backend compiles for)."""
    v = (variant or Variant()).resolved(backend, cpu)
    prefix = prefix or symbol_prefix(backend, v, cpu)
    module = ir.Module(name=prefix)
    params = Params(backend, v, prefix, backend.scheduled_cpu(cpu))
    bulk.build_all(module, params)
    entries.build_helpers(module, params)
    short.build_all(module, params)
    keysetup.build_key_init(module, params)
    entries.build_seal_out(module, params, "seal")
    entries.build_seal_out(module, params, "seal_out")
    entries.build_open_out(module, params, "open")
    entries.build_open_out(module, params, "open_out")
    if backend.two_slice:  # the record body needs the stitched function with the byte
        entries.build_record(module, params)
    gather.build_gather(module, params)
    entries.build_inner(module, params)
    stream.build_stream(module, params)
    if backend.two_slice:
        entries.build_two_slice(module, params)
    for name in short.placed_last(params) + bulk.placed_last(params):
        module.globals[name] = module.globals.pop(name)
    return prefix, aligned(str(module))


FUNCTION_ALIGN = 64  # bytes: a cache line, the op cache's line on Zen


def aligned(text: str) -> str:
    """Every function starts on a FUNCTION_ALIGN boundary (llvmlite has no attribute for it):
    so a function's code sits on the same lines whatever precedes it.  At 16 bytes, one
    function growing moved the ones after it, and unchanged functions measured 4-14% slower or
    faster (Zen 3, design notes)."""
    return re.sub(r"^(define .*)$", rf"\1 align {FUNCTION_ALIGN}", text, flags=re.M)
