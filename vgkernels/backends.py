"""The backend table: one row per instruction-set level.  Backends are data, not code.

A row names the features it needs, how many 16-byte blocks one vector register holds, the
group size (blocks per stitched iteration) and the defaults of its variants
(`vgkernels.variant`).  The kernel
generators read these rows; nothing else in the package branches on a backend's name.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from . import cpu


@dataclass(frozen=True)
class Backend:
    name: str
    features: frozenset[str]  # FEATURES names the CPU must have
    llvm_features: str  # target features the code generator gets (others switched off)
    width: int  # 16-byte blocks per vector register: 1 (xmm), 2 (ymm), 4 (zmm)
    group: int  # blocks per stitched-loop iteration (default)
    groups: tuple[int, ...]  # group sizes the generator accepts for sweeps
    prims: str  # "portable" (plain IR) or "x86" (AES-NI / (V)PCLMULQDQ intrinsics)
    masked: bool = False  # AVX-512 byte-masked loads/stores for partial vectors
    two_slice: bool = True  # has the TLS-record two-slice entry (seal_two_slice)
    copy_below: tuple[int, int] = (0, 0)  # (aligned, unaligned) copy+seal dispatch
    karatsuba: bool = False  # default GHASH multiply: 3 (Karatsuba) or 4 carry-less products,
    # where the multiplies share the AES pipes (see `karatsuba_for`)
    skew: int = 0  # default rounds of the next group begun early in the stitched loop
    enc_lag: int = 1  # enc's lead loop hashes the group stored this many iterations back
    enc_carry: bool = False  # enc hashes the previous group from registers, not reloaded
    stitch_min: int | None = None  # default blocks before the stitched loop (None: 2 x group)
    first_round: bool = False  # the stitched loops take the counters' first AES round from
    # the key's table (`CTX_ROUND1`, `stitched.first_round_table`) while the low byte cannot carry
    hash_lag: int = 0  # the stitched groups begin their multiplies this many AES rounds in
    hash_state_last: bool = False  # and hash the vector the state is XORed into last
    # (`stitched.GroupHash`; measured on Zen 5, design notes "Zen 5, eighteenth session")
    enc_late: bool = False  # enc's loop (not skewed) takes each group's counter states at the
    # top of its iteration (`stitched.checked`), none carried across the group
    # enc's functions whose loops load each key power at each multiply, from a stack copy: a
    # memory operand, no register held or spilled (`bulk.BulkFn.reloaded`): "seal" (enc and
    # its lead function), "record" (the two-slice form, gather's)
    reloaded_powers: frozenset[str] = frozenset()
    notes: str = ""
    rank: int = 0  # higher is preferred when choosing the best usable backend
    llvm_cpu: str | None = None  # None: schedule for the host; a name: that CPU model

    def missing(self, have: frozenset[str]) -> frozenset[str]:
        return self.features - have

    def scheduled_cpu(self, llvm_cpu: str | None = None) -> str:
        """The LLVM CPU code of this row is scheduled for: ``llvm_cpu``, else the row's own,
        else the host."""
        return llvm_cpu or self.llvm_cpu or cpu.host_cpu_name()

    @property
    def lead_group(self) -> int:
        """Blocks per iteration of the loop long messages run in: the largest group (enc's
        lead function where it is larger than the default group, dec's first loop;
        `kernels.bulk`)."""
        return max(self.groups)

    def karatsuba_for(self, llvm_cpu: str | None = None) -> bool:
        """The default GHASH multiply of code scheduled for ``llvm_cpu`` (None: the CPU this
        backend compiles for by default, `scheduled_cpu`)."""
        return self.karatsuba and self.scheduled_cpu(llvm_cpu) not in CLMUL_OWN_PORT

    @property
    def llvm_enabled(self) -> frozenset[str]:
        """The LLVM target features its code generator gets switched on (``+name``)."""
        return frozenset(t[1:] for t in self.llvm_features.split(",") if t.startswith("+"))

    @property
    def vex(self) -> bool:
        """Three-operand (VEX or EVEX) code: the AVX backends, not the SSE one."""
        return "avx" in self.llvm_enabled

    @property
    def vector_partials(self) -> bool:
        """Partial blocks through vector registers (`ir.partial.load_partial_vec`,
        `store_partial_vec`) rather than general ones: the AVX backends without byte masks.
        Same run on Zen 3, against general registers: seal 16-145 B 0.82-0.99, open
        0.82-0.95; on the SSE backend (two-operand pshufb, no byte broadcast) mixed, 257 B
        1.01-1.08."""
        return self.vex and not self.masked


# LLVM CPU names of Intel cores (Haswell on) whose (V)PCLMULQDQ has a port of its own (5)
# while AES runs on ports 0/1: Karatsuba's extra shuffle and XOR per vector take ALU slots
# the AES rounds need, to save a multiply that was nearly free.  Measured on Sapphire Rapids
# (LLVM says rocketlake, by its model number): schoolbook seal and open 0.91-1.0x of
# Karatsuba on the AVX backends (design notes).  AMD's Zen cores run both on the same two
# pipes, where Karatsuba measured 2-5% faster; generic CPU names keep it too.
CLMUL_OWN_PORT = frozenset({
    "haswell", "broadwell", "skylake", "skylake-avx512", "skx", "cascadelake", "cooperlake",
    "cannonlake", "icelake-client", "icelake-server", "rocketlake", "tigerlake",
    "sapphirerapids", "emeraldrapids", "graniterapids", "graniterapids-d", "diamondrapids",
    "alderlake", "raptorlake", "meteorlake", "arrowlake", "arrowlake-s", "lunarlake",
    "pantherlake", "core-avx2",
})

_BASE = ("-avx512f,-avx512bw,-avx512vl,-avx512dq,-avx512cd,-avx512vbmi,-avx512vbmi2,-vaes,"
         "-vpclmulqdq,-gfni,-sha,-evex512")

BACKENDS: tuple[Backend, ...] = (
    Backend(
        "portable", frozenset(), "-aes,-pclmul,-avx,-avx2,-fma,-f16c,-bmi,-bmi2,-adx," + _BASE,
        width=1, group=4, groups=(4, 8), prims="portable", rank=0, llvm_cpu="x86-64",
        notes="plain LLVM IR: table-free AES (GF(2^8) inversion), bit-serial masked GHASH",
    ),
    Backend(
        "aesni_pclmul", frozenset({"aes", "pclmulqdq", "ssse3"}),
        "+aes,+pclmul,+ssse3,+sse4.1,-avx,-avx2,-fma,-f16c,-bmi,-bmi2,-adx," + _BASE,
        width=1, group=8, groups=(4, 6, 8), prims="x86", rank=1, karatsuba=True,
        first_round=True,
        notes="legacy SSE encoding, 16 xmm registers",
    ),
    Backend(
        "aesni_pclmul_avx", frozenset({"aes", "pclmulqdq", "ssse3", "avx"}),
        "+aes,+pclmul,+ssse3,+sse4.1,+avx,-avx2,-fma,-bmi,-bmi2,-adx," + _BASE,
        width=1, group=8, groups=(4, 6, 8), prims="x86", rank=2, karatsuba=True,
        first_round=True, enc_late=True, reloaded_powers=frozenset({"record"}),
        notes="VEX encoding, the background threads' StitchAvx8",
    ),
    Backend(
        "vaes_avx2", frozenset({"aes", "pclmulqdq", "ssse3", "avx", "avx2", "vaes", "vpclmulqdq"}),
        "+aes,+pclmul,+ssse3,+sse4.1,+avx,+avx2,+vaes,+vpclmulqdq,+bmi,+bmi2,-avx512f,-avx512bw,"
        "-avx512vl,-avx512dq,-avx512cd,-avx512vbmi,-avx512vbmi2,-evex512",
        width=2, group=8, groups=(4, 8, 16), prims="x86", rank=3, karatsuba=True, skew=5,
        enc_lag=2, first_round=True, hash_lag=1, hash_state_last=True,
        reloaded_powers=frozenset({"seal", "record"}),
        notes="ymm, 16 vector registers",
    ),
    Backend(
        "vaes_avx512",
        frozenset({"aes", "pclmulqdq", "ssse3", "avx", "avx2", "avx512f", "avx512bw", "avx512vl",
                   "vaes", "vpclmulqdq"}),
        "+aes,+pclmul,+ssse3,+sse4.1,+avx,+avx2,+vaes,+vpclmulqdq,+bmi,+bmi2,+avx512f,+avx512bw,"
        "+avx512vl,+avx512dq,+evex512",
        width=4, group=32, groups=(8, 16, 32), prims="x86", masked=True, rank=4,
        karatsuba=True, skew=0, stitch_min=32, enc_carry=True, first_round=True, hash_lag=3,
        hash_state_last=True, enc_late=True,
        notes="zmm, 32 vector registers, byte-masked partial vectors",
    ),
)

BY_NAME: dict[str, Backend] = {b.name: b for b in BACKENDS}


def get(name: str) -> Backend:
    try:
        return BY_NAME[name]
    except KeyError:
        raise ValueError(f"unknown backend {name!r}; known: {', '.join(BY_NAME)}") from None


def availability(mask: str | None = None) -> dict[str, str | None]:
    """Backend name -> None when usable, else the reason it is not."""
    have = cpu.usable_features(mask)
    host = cpu.host_features()
    out: dict[str, str | None] = {}
    for b in BACKENDS:
        miss = b.missing(have)
        if not miss:
            out[b.name] = None
        elif b.missing(host):
            out[b.name] = f"CPU lacks {', '.join(sorted(b.missing(host)))}"
        else:
            out[b.name] = f"masked off by {cpu.ENV_VAR}: needs {', '.join(sorted(miss))}"
    return out


def usable(mask: str | None = None) -> list[Backend]:
    avail = availability(mask)
    return [b for b in BACKENDS if avail[b.name] is None]


def choose(name: str | None = None, mask: str | None = None) -> Backend:
    """The named backend (if usable) or the best usable one; ``$VG_BACKEND`` names one too."""
    name = name or os.environ.get("VG_BACKEND") or None
    if name is None:
        return max(usable(mask), key=lambda b: b.rank)
    be = get(name)
    why = availability(mask)[be.name]
    if why is not None:
        raise RuntimeError(f"backend {name} is not usable here: {why}")
    return be
