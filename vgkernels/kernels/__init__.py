"""Kernel generators: compose the IR building blocks into the C ABI of `vgkernels.abi`.

bulk      the one stitched-loop generator (AES-CTR interleaved with GHASH), parameterised
          by vector width, group size and tail strategy, plus the leftover ("rest") chunk
keysetup  round keys and the table of H powers
entries   seal / seal_out / seal_gather / open / open_out / inner kernels / two-slice
stream    streaming init / aad / encrypt / decrypt / finish
build     one module per (backend, variant), compiled through `vgkernels.jit`
"""
