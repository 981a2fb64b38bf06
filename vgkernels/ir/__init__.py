"""IR building blocks: typed helpers over llvmlite's IRBuilder, one concern per module.

core     types, constants, loads/stores, byte shuffles, loops
prims    the per-backend primitives: aesenc / aesenclast / clmul (x86 intrinsics or plain IR)
aes      key expansion and the AES round sequence
ghash    GF(2^128) multiply with deferred reduction, reduction, horizontal fold
ctr      counter blocks (inc32)
partial  loads and stores of a partial block or vector
"""
