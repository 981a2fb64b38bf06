"""Peers timed in the same driver: the system's OpenSSL libcrypto through EVP, the OpenSSL the
``cryptography`` wheel bundles (4.0.x, with VAES/AVX-512 GCM) through the same EVP sequence
called natively (``BundledOpenSSL``: its functions are found in the wheel's static ``.symtab``),
and the ``cryptography`` package's AESGCM at Python level.

OpenSSL reads ``OPENSSL_ia32cap`` once, when the library initialises, so each masked
configuration runs in its own process (see vgkernels.bench.sweep).  ``ia32cap_mask(backend)``
clears every capability bit of a feature the backend's code generator does not get, so OpenSSL
takes the code path that feature set allows.

The ``OPENSSL_ia32cap`` layout (OpenSSL's OPENSSL_ia32cap(3); checked here against the effective
vector ``OpenSSL_version(OPENSSL_CPU_INFO)`` reports): ``"W0:W1"``, a leading ``~`` on a word
clears the given bits instead of setting the word.

* W0 = CPUID.1 EDX (bits 0-31) | ECX (bits 32-63): PCLMULQDQ 33 (ECX 1), SSSE3 41 (ECX 9),
  MOVBE 54 (ECX 22), AES-NI 57 (ECX 25), AVX 60 (ECX 28).
* W1 = CPUID.7.0 EBX (bits 0-31) | ECX (bits 32-63): BMI1 3, AVX2 5, BMI2 8, AVX512F 16,
  AVX512DQ 17, ADX 19, AVX512IFMA 21, AVX512CD 28, AVX512BW 30, AVX512VL 31, VAES 41 (ECX 9),
  VPCLMULQDQ 42 (ECX 10).

MOVBE is not one of vgkernels' features and is left alone (the host has it); OpenSSL's AVX GCM
needs it.

OpenSSL 3.0's AES-GCM dispatch on x86-64 (providers/implementations/ciphers/
cipher_aes_gcm_hw*.c, crypto/modes/gcm128.c, include/crypto/aes_platform.h), which
``openssl_gcm_path`` reproduces from the effective vector:

* AES-NI (57): key schedule and CTR by aesni_*; GHASH by gcm_ghash_avx if PCLMULQDQ (33) and
  AVX (60) and MOVBE (54), by gcm_ghash_clmul if PCLMULQDQ alone, else gcm_ghash_4bit.  With
  gcm_ghash_avx, aesni_gcm_encrypt (the AVX stitched 6-block loop) takes the bulk of texts of
  at least 288 bytes (it refuses shorter ones); the rest goes through aesni_ctr32_encrypt_blocks
  + gcm_ghash_avx.
* no AES-NI: bit-sliced AES (bsaes) if SSSE3 (41), else vpaes if SSSE3, else the T-table
  AES_encrypt block by block; GHASH as above.
* Debian's libcrypto 3.0 has no VAES / AVX-512 GCM code (no zmm vaesenc in its text), so AVX2,
  VAES, VPCLMULQDQ and AVX-512 bits select nothing more for GCM: the vaes_* masks take the AVX
  path.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import os
import re
from collections.abc import Callable
from dataclasses import dataclass

import llvmlite.binding as llvm
from llvmlite import ir

from .. import elf, jit
from ..backends import Backend

ENV_LIBCRYPTO = "VG_LIBCRYPTO"  # path (or name) of the libcrypto to load; overrides the finder
OPENSSL_CPU_INFO = 9  # OpenSSL_version(): "CPUINFO: OPENSSL_ia32cap=0x...:0x... env:..."
EVP_CTRL_GCM_GET_TAG = 0x10

# feature -> (word, bit) in OPENSSL_ia32cap
OPENSSL_BITS: dict[str, tuple[int, int]] = {
    "pclmulqdq": (0, 33), "ssse3": (0, 41), "aes": (0, 57), "avx": (0, 60),
    "bmi1": (1, 3), "avx2": (1, 5), "bmi2": (1, 8), "avx512f": (1, 16), "avx512dq": (1, 17),
    "adx": (1, 19), "avx512ifma": (1, 21), "avx512cd": (1, 28), "avx512bw": (1, 30),
    "avx512vl": (1, 31), "vaes": (1, 41), "vpclmulqdq": (1, 42),
}
MOVBE_BIT = 54
# LLVM feature name -> OPENSSL_BITS name
_LLVM_TO_OPENSSL = {"aes": "aes", "pclmul": "pclmulqdq", "ssse3": "ssse3", "avx": "avx",
                    "avx2": "avx2", "bmi": "bmi1", "bmi2": "bmi2", "adx": "adx",
                    "avx512f": "avx512f", "avx512dq": "avx512dq", "avx512ifma": "avx512ifma",
                    "avx512cd": "avx512cd", "avx512bw": "avx512bw", "avx512vl": "avx512vl",
                    "vaes": "vaes", "vpclmulqdq": "vpclmulqdq"}


class PeerUnavailable(RuntimeError):
    """The peer cannot run here (no libcrypto, or one without the EVP functions we need)."""


def backend_features(be: Backend) -> frozenset[str]:
    """OPENSSL_BITS names the backend's code generator gets (``+name`` in its llvm_features)."""
    return frozenset(_LLVM_TO_OPENSSL[f] for f in be.llvm_enabled if f in _LLVM_TO_OPENSSL)


def ia32cap_mask(be: Backend) -> str:
    """``OPENSSL_ia32cap`` value clearing every listed feature the backend does not have."""
    words = [0, 0]
    keep = backend_features(be)
    for name, (w, bit) in OPENSSL_BITS.items():
        if name not in keep:
            words[w] |= 1 << bit
    return f"~0x{words[0]:x}:~0x{words[1]:x}"


def parse_cpuinfo(text: str) -> tuple[int, int] | None:
    """(W0, W1) from OpenSSL_version(OPENSSL_CPU_INFO)'s ``OPENSSL_ia32cap=0x..:0x..``."""
    m = re.search(r"OPENSSL_ia32cap=0x([0-9a-fA-F]+):0x([0-9a-fA-F]+)", text or "")
    return (int(m.group(1), 16), int(m.group(2), 16)) if m else None


def openssl_gcm_path(caps: tuple[int, int] | None, version: str) -> str:
    """The AES-GCM encrypt path OpenSSL 3.0 takes on x86-64 for an effective capability vector
    (see the module docstring)."""
    if caps is None:
        return "unknown (no effective OPENSSL_ia32cap reported)"
    w0, _w1 = caps

    def has(bit: int) -> bool:
        return bool(w0 >> bit & 1)

    if has(33) and has(60) and has(MOVBE_BIT):
        ghash = "gcm_ghash_avx"
    elif has(33):
        ghash = "gcm_ghash_clmul"
    else:
        ghash = "gcm_ghash_4bit"
    if has(57):
        if ghash == "gcm_ghash_avx":
            path = ("aesni_gcm_encrypt (AVX stitched, 6 blocks/iter) from 288 B; "
                    "aesni_ctr32_encrypt_blocks + gcm_ghash_avx below and for the remainder")
        else:
            path = f"aesni_ctr32_encrypt_blocks + {ghash} (not stitched)"
    elif has(41):
        path = f"bsaes_ctr32_encrypt_blocks (bit-sliced, SSSE3) + {ghash}"
    else:
        path = f"AES_encrypt (T-tables) block by block + {ghash}"
    if not version.startswith("OpenSSL 3.0"):
        path += f" [dispatch logic of OpenSSL 3.0; this is {version}]"
    return path


def find_libcrypto(path: str | None = None) -> str:
    """The libcrypto to load: ``path``, else ``$VG_LIBCRYPTO``, else ctypes' finder."""
    found = path or os.environ.get(ENV_LIBCRYPTO) or ctypes.util.find_library("crypto")
    if not found:
        raise PeerUnavailable("OpenSSL peer skipped: ctypes.util.find_library('crypto') found no "
                              f"libcrypto (set {ENV_LIBCRYPTO} to its path)")
    return found


_EVP = {  # name -> (restype, argtypes) for ctypes; the IR declares the same
    "EVP_CIPHER_CTX_new": (ctypes.c_void_p, []),
    "EVP_EncryptInit_ex": (ctypes.c_int, [ctypes.c_void_p] * 5),
    "EVP_EncryptUpdate": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                                         ctypes.c_void_p, ctypes.c_int]),
    "EVP_EncryptFinal_ex": (ctypes.c_int, [ctypes.c_void_p] * 3),
    "EVP_CIPHER_CTX_ctrl": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_int, ctypes.c_int,
                                           ctypes.c_void_p]),
    "EVP_aes_128_gcm": (ctypes.c_void_p, []),
    "EVP_aes_192_gcm": (ctypes.c_void_p, []),
    "EVP_aes_256_gcm": (ctypes.c_void_p, []),
    "OpenSSL_version": (ctypes.c_char_p, [ctypes.c_int]),
}


_IR_EVP = ("EVP_EncryptInit_ex", "EVP_EncryptUpdate", "EVP_EncryptFinal_ex",
           "EVP_CIPHER_CTX_ctrl")  # what the seal harness calls


def _seal_ir(prefix: str = "", fname: str = "vgb_ossl_seal",
             module: str = "vg_bench_openssl") -> str:
    """``i32 vgb_ossl_seal(EVP_CIPHER_CTX *c, nonce, nonce_len, aad, aad_len, inout, len, tag)``
    with the seal kernel's signature (nonce_len must be 12, OpenSSL's default IV length): the
    per-record EVP sequence with the key set once.  Returns 0 or -1 like the kernels.
    ``prefix`` renames the EVP functions it calls (``vgb_o4_EVP_EncryptUpdate``, ...): the
    bundled-OpenSSL peer binds those names to its own addresses, so they never clash with the
    system libcrypto's exported ones in the same process."""
    i8, i32, i64, p = ir.IntType(8), ir.IntType(32), ir.IntType(64), ir.PointerType()
    m = ir.Module(name=module)
    init = ir.Function(m, ir.FunctionType(i32, [p] * 5), name=prefix + "EVP_EncryptInit_ex")
    upd = ir.Function(m, ir.FunctionType(i32, [p, p, p, p, i32]),
                      name=prefix + "EVP_EncryptUpdate")
    fin = ir.Function(m, ir.FunctionType(i32, [p, p, p]), name=prefix + "EVP_EncryptFinal_ex")
    ctrl = ir.Function(m, ir.FunctionType(i32, [p, i32, i32, p]),
                       name=prefix + "EVP_CIPHER_CTX_ctrl")
    f = ir.Function(m, ir.FunctionType(i32, [p, p, i64, p, i64, p, i64, p]), name=fname)
    f.attributes.add("noinline")
    c, nonce, _nl, aad, al, buf, n, tag = f.args
    b = ir.IRBuilder(f.append_basic_block("entry"))
    outl = b.alloca(i32)
    outl.type = p  # opaque pointers (llvmlite types allocas as typed ones)
    null = ir.Constant(p, None)
    one = ir.Constant(i32, 1)
    ok = b.icmp_signed("==", b.call(init, [c, null, null, null, nonce]), one)
    r = b.call(upd, [c, null, outl, aad, b.trunc(al, i32)])
    ok = b.and_(ok, b.icmp_signed("==", r, one))
    r = b.call(upd, [c, buf, outl, buf, b.trunc(n, i32)])
    ok = b.and_(ok, b.icmp_signed("==", r, one))
    done = b.zext(b.load(outl, typ=i32), i64)
    r = b.call(fin, [c, b.gep(buf, [done], source_etype=i8), outl])
    ok = b.and_(ok, b.icmp_signed("==", r, one))
    r = b.call(ctrl, [c, ir.Constant(i32, EVP_CTRL_GCM_GET_TAG), ir.Constant(i32, 16), tag])
    ok = b.and_(ok, b.icmp_signed("==", r, one))
    b.ret(b.select(ok, ir.Constant(i32, 0), ir.Constant(i32, -1)))
    return str(m)


@dataclass
class OpenSSLInfo:
    """Which libcrypto a peer loaded, its version and CPU capability mask."""
    path: str
    version: str
    cpuinfo: str
    ia32cap_env: str | None
    caps: tuple[int, int] | None
    gcm_path: str


class _EVPPeer:
    """An OpenSSL whose EVP functions are ``self.fns`` (ctypes callables) and whose seal
    harness (``_seal_ir``) is compiled at ``self.seal_address``."""

    what = "OpenSSL peer"
    fns: dict[str, Callable]
    seal_address: int
    info: OpenSSLInfo
    _ctx: dict[bytes, int]

    def context(self, key: bytes) -> int:
        """An EVP_CIPHER_CTX with the key set once (per key)."""
        c = self._ctx.get(key)
        if c is None:
            cipher = {16: "EVP_aes_128_gcm", 24: "EVP_aes_192_gcm", 32: "EVP_aes_256_gcm"}
            c = self.fns["EVP_CIPHER_CTX_new"]()
            if not c or self.fns["EVP_EncryptInit_ex"](c, self.fns[cipher[len(key)]](), None,
                                                       key, None) != 1:
                raise PeerUnavailable(f"{self.what} skipped: EVP_EncryptInit_ex failed "
                                      f"({self.info.version})")
            self._ctx[key] = c
        return c

    def seal(self, key: bytes, nonce: bytes, aad: bytes, data: bytes) -> bytes:
        """ciphertext || tag through the seal harness (for the cross-check with the kernels)."""
        f = ctypes.CFUNCTYPE(ctypes.c_int, *([ctypes.c_void_p] * 2), ctypes.c_size_t,
                             ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p, ctypes.c_size_t,
                             ctypes.c_void_p)(self.seal_address)
        buf = ctypes.create_string_buffer(data, max(len(data), 1))
        tag = ctypes.create_string_buffer(16)
        if f(self.context(key), nonce, len(nonce), aad, len(aad), buf, len(data), tag) != 0:
            raise RuntimeError(f"{self.what}: seal harness failed")
        return buf.raw[: len(data)] + tag.raw


class OpenSSL(_EVPPeer):
    """libcrypto loaded with ctypes; ``vgb_ossl_seal`` compiled against it."""

    def __init__(self, path: str | None = None):
        self.path = find_libcrypto(path)
        try:
            self.lib = ctypes.CDLL(self.path)
        except OSError as e:
            raise PeerUnavailable(f"OpenSSL peer skipped: cannot load libcrypto {self.path!r} "
                                  f"({e})") from None
        self.fns: dict[str, Callable] = {}
        for name, (res, args) in _EVP.items():
            try:
                fn = getattr(self.lib, name)
            except AttributeError:
                raise PeerUnavailable(f"OpenSSL peer skipped: {self.path} has no {name} "
                                      "(OpenSSL >= 1.1 EVP API needed)") from None
            fn.restype, fn.argtypes = res, args
            self.fns[name] = fn
        # The JIT resolves the IR's EVP_* calls to this very library (not another one that
        # may be loaded in the process, e.g. one bundled by a wheel).
        for name in _IR_EVP:
            llvm.add_symbol(name, ctypes.cast(self.fns[name], ctypes.c_void_p).value)
        jit.init()
        self.library = jit.compile_ir("vg_bench_openssl", _seal_ir(), "")
        self.seal_address = self.library.address("vgb_ossl_seal")
        self._ctx: dict[bytes, int] = {}
        version = self.fns["OpenSSL_version"](0).decode()
        cpuinfo = (self.fns["OpenSSL_version"](OPENSSL_CPU_INFO) or b"").decode()
        caps = parse_cpuinfo(cpuinfo)
        self.info = OpenSSLInfo(self.path, version, cpuinfo, os.environ.get("OPENSSL_ia32cap"),
                                caps, openssl_gcm_path(caps, version))


@functools.cache
def openssl(path: str | None = None) -> OpenSSL:
    """This process's OpenSSL peer (raises PeerUnavailable with a clear message)."""
    return OpenSSL(path)


# -- the OpenSSL bundled in the cryptography wheel, called natively -------------------------

O4_PREFIX = "vgb_o4_"  # IR names of the bundled OpenSSL's EVP functions (bound by add_symbol)
VAES_GCM_W1 = (1 << 42) | (1 << 41) | (1 << 31) | (1 << 30) | (1 << 17) | (1 << 16)


def bundled_gcm_path(caps: tuple[int, int] | None, version: str) -> str:
    """The AES-GCM encrypt path of OpenSSL >= 3.1 on x86-64 (the cryptography wheel's): the
    VAES/AVX-512 code (ossl_aes_gcm_*_avx512, providers' vaes_gcm) when
    ossl_vaes_vpclmulqdq_capable() sees AVX512F, DQ, BW, VL, VAES and VPCLMULQDQ in W1 (and
    AES-NI), else the OpenSSL 3.0 dispatch (AVX stitched aesni_gcm_encrypt, ...).  There is no
    VAES/AVX2 GCM in it: the vaes_avx2 mask takes the AVX path."""
    if caps is not None and caps[0] >> 57 & 1 and caps[1] & VAES_GCM_W1 == VAES_GCM_W1:
        return "ossl_aes_gcm_encrypt_avx512 (VAES + VPCLMULQDQ, AVX-512, 16 blocks/iter)"
    return openssl_gcm_path(caps, "OpenSSL 3.0").replace(" [dispatch logic", "") + \
        f" [{version}]"


def cryptography_module() -> str:
    """Path of ``cryptography/hazmat/bindings/_rust.abi3.so``, imported (so it is mapped and
    its OpenSSL initialised, OPENSSL_ia32cap read)."""
    try:
        from cryptography.hazmat.bindings import _rust  # lazy: probed, see the except
    except Exception as e:  # noqa: BLE001 - any import problem means "not available"
        raise PeerUnavailable(f"bundled OpenSSL peer skipped: cannot import cryptography's "
                              f"_rust module ({e})") from None
    path = getattr(_rust, "__file__", None)
    if not path:
        raise PeerUnavailable("bundled OpenSSL peer skipped: cryptography's _rust module has "
                              "no file")
    return path


class BundledOpenSSL(_EVPPeer):
    """The OpenSSL statically linked into cryptography's ``_rust.abi3.so``, called natively.

    Its EVP functions are not exported; their addresses come from the file's ``.symtab``
    (vgkernels.elf) plus its load base.  The seal harness calls them under the IR
    names ``vgb_o4_EVP_*``, bound to those addresses with ``llvm.add_symbol``."""

    what = "bundled OpenSSL peer"

    def __init__(self, module: str | None = None):
        self.path = module or cryptography_module()
        try:
            addrs = elf.runtime_addresses(self.path, _EVP)
        except (OSError, elf.ElfError) as e:
            raise PeerUnavailable(f"bundled OpenSSL peer skipped: {e}") from None
        missing = [n for n in _EVP if n not in addrs]
        if missing:
            raise PeerUnavailable(f"bundled OpenSSL peer skipped: {self.path} has no "
                                  f"{', '.join(missing)} in its .symtab (another cryptography "
                                  "build?)")
        self.addresses = addrs
        self.fns: dict[str, Callable] = {
            name: ctypes.CFUNCTYPE(res, *args)(addrs[name]) for name, (res, args) in _EVP.items()}
        version = (self.fns["OpenSSL_version"](0) or b"").decode()
        if not version.startswith("OpenSSL"):
            raise PeerUnavailable(f"bundled OpenSSL peer skipped: OpenSSL_version(0) at "
                                  f"{addrs['OpenSSL_version']:#x} gave {version!r}")
        for name in _IR_EVP:
            llvm.add_symbol(O4_PREFIX + name, addrs[name])
        jit.init()
        self.library = jit.compile_ir("vg_bench_openssl4",
                                      _seal_ir(O4_PREFIX, "vgb_o4_seal", "vg_bench_openssl4"), "")
        self.seal_address = self.library.address("vgb_o4_seal")
        self._ctx: dict[bytes, int] = {}
        cpuinfo = (self.fns["OpenSSL_version"](OPENSSL_CPU_INFO) or b"").decode()
        caps = parse_cpuinfo(cpuinfo)
        self.info = OpenSSLInfo(self.path, version, cpuinfo, os.environ.get("OPENSSL_ia32cap"),
                                caps, bundled_gcm_path(caps, version))


@functools.cache
def bundled_openssl() -> BundledOpenSSL:
    """This process's bundled-OpenSSL peer (raises PeerUnavailable with a clear message)."""
    return BundledOpenSSL()


def cryptography_version() -> str | None:
    """The OpenSSL the ``cryptography`` package runs on (its wheels bundle their own)."""
    try:
        from cryptography.hazmat.backends.openssl import backend  # lazy: probed, see the except
    except Exception:  # noqa: BLE001 - any import problem means "not available"
        return None
    return backend.openssl_version_text()


def cryptography_encrypt(key: bytes, nonce: bytes, aad: bytes, data: bytes
                         ) -> Callable[[], bytes]:
    """A zero-argument AESGCM.encrypt call (the Python-level peer: includes the call)."""
    # lazy: cryptography's _rust loads only where a peer uses it (cryptography_module probes it)
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    aead = AESGCM(key)
    return functools.partial(aead.encrypt, nonce, data, aad)
