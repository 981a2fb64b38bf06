"""Kernel generators: compose the IR building blocks into the C ABI of `vgkernels.abi`.

This package only generates IR; `vgkernels.build` compiles and loads it.

module     one LLVM module per (backend, variant): `generate` (symbols named by `vgkernels.variant`)
bulk       the bulk functions vg.bulk.<mode>.<nr>: their arguments, round keys and powers
modes      what each bulk mode does (enc, dec, hash, ctr): strategies, not string compares
stitched   the stitched loop (AES-CTR interleaved with GHASH), one for every vector width
leftover   what the stitched loop leaves: named steps over a GHASH accumulator, one reduction
frames     where the bulk functions' vector spill slots fall: on 32-byte boundaries
keysetup   round keys and the table of H powers
entries    seal / seal_out / open / open_out / inner kernels / two-slice
gather     seal_gather
stream     streaming init / aad / encrypt / decrypt / finish
"""

from .module import generate

__all__ = ["generate"]
