"""EVP_AEAD peers: aws-lc (statically linked into the ``awscrt`` wheel) and any BoringSSL or
aws-lc ``libcrypto`` given by path, timed natively beside the kernels.

Both libraries keep BoringSSL's EVP_AEAD interface (include/openssl/aead.h):

* ``EVP_AEAD_CTX_new(aead, key, key_len, tag_len)``: the key is expanded once;
* ``EVP_AEAD_CTX_seal_scatter(ctx, out, out_tag, &tag_len, max_tag, nonce, nonce_len, in,
  in_len, extra_in, extra_in_len, ad, ad_len)``: ``in`` to ``out`` (in place when equal), then
  ``extra_in`` encrypted into ``out_tag`` followed by the tag.  With no ``extra_in`` it is the
  in-place seal with a separate tag (aws-lc-rs's ``seal_in_place_separate_tag``; the library's
  own ``EVP_AEAD_CTX_seal`` is this call with ``out_tag = out + in_len``); with the trailing
  byte of an n + 1 text as ``extra_in`` it is aws-lc's own gather, the n + 1 TLS shape;
* ``EVP_AEAD_CTX_open_gather(ctx, out, nonce, nonce_len, in, in_len, tag, tag_len, ad,
  ad_len)``: open with a separate tag (out of place here, like the kernels' ``open_out``);
* ``EVP_AEAD_CTX_seal`` / ``EVP_AEAD_CTX_open`` (ciphertext || tag) are bound too, for the
  cross-checks.

Where the functions come from: a library built as a shared object exports them (``dlsym``);
the awscrt wheel's ``_awscrt.abi3.so`` exports none but keeps its ``.symtab``, so their
addresses are read from it (vgkernels.elf), as for the OpenSSL inside
``cryptography``.  ``AeadPeer`` tries the export first, then the symbol table.

CPU features: aws-lc and BoringSSL read ``OPENSSL_ia32cap`` in ``OPENSSL_cpuid_setup`` (aws-lc:
crypto/fipsmodule/cpucap/cpu_intel.c, ``handle_cpu_env``) with OpenSSL's syntax, ``~`` clearing
bits, the first value for CPUID.1 EDX:ECX, the second for CPUID.7 EBX:ECX.  The probed vector
is the hidden ``uint32_t OPENSSL_ia32cap_P[4]``, read back here after the library initialised
(``CRYPTO_library_init``), so a mask that did not take effect is an error rather than an
unmasked measurement.  aws-lc's GCM dispatch (crypto/fipsmodule/modes/gcm.c and
cipher/e_aes.c): ``aes_gcm_encrypt_avx512`` when ``crypto_gcm_avx512_enabled()`` (VAES,
VPCLMULQDQ and AVX512F+DQ+BW+VL); else the AES-NI + AVX stitched ``aesni_gcm_encrypt`` (AES-NI,
PCLMULQDQ, AVX and MOVBE); else CTR + CLMUL GHASH.  The awscrt build has no VAES/AVX2 GCM: the
``vaes_avx2`` mask takes the AVX path.
"""

from __future__ import annotations

import ctypes
import functools
import os
import re
from collections.abc import Callable
from dataclasses import dataclass

import llvmlite.binding as llvm
from llvmlite import ir

from .. import abi, elf, jit
from .peers import MOVBE_BIT, OPENSSL_BITS, PeerUnavailable

AWSLC = "aws-lc"  # the built-in peer's name: aws-lc inside the awscrt wheel
ENV_PEERS = "VG_AEAD_PEERS"  # NAME=PATH[,NAME=PATH...]: peers by path, as --peer gives them

P, Z, INT = ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int
_AEAD = {  # name -> (restype, argtypes)
    "EVP_aead_aes_128_gcm": (P, []),
    "EVP_aead_aes_192_gcm": (P, []),
    "EVP_aead_aes_256_gcm": (P, []),
    "EVP_AEAD_CTX_new": (P, [P, P, Z, Z]),
    "EVP_AEAD_CTX_seal": (INT, [P, P, P, Z, P, Z, P, Z, P, Z]),
    "EVP_AEAD_CTX_open": (INT, [P, P, P, Z, P, Z, P, Z, P, Z]),
    "EVP_AEAD_CTX_seal_scatter": (INT, [P, P, P, P, Z, P, Z, P, Z, P, Z, P, Z]),
    "EVP_AEAD_CTX_open_gather": (INT, [P, P, P, Z, P, Z, P, Z, P, Z]),
}
_OPTIONAL = ("CRYPTO_library_init", "awslc_version_string", "OpenSSL_version",
             "OPENSSL_ia32cap_P")
AVX512_W1 = (1 << 31) | (1 << 30) | (1 << 17) | (1 << 16)
VAES_W1, VPCLMUL_W1 = 1 << 41, 1 << 42


def awscrt_module() -> str:
    """Path of the awscrt wheel's ``_awscrt.abi3.so`` (imported, so it is mapped)."""
    try:
        import _awscrt  # lazy: an optional peer (the `peers` extra), probed when asked for
    except Exception as e:  # noqa: BLE001 - any import problem means "not available"
        raise PeerUnavailable(f"aws-lc peer skipped: cannot import awscrt's _awscrt ({e}; "
                              "pip install 'vgkernels[peers]')") from None
    path = getattr(_awscrt, "__file__", None)
    if not path:
        raise PeerUnavailable("aws-lc peer skipped: awscrt's _awscrt module has no file")
    return path


def parse_peers(specs: list[str] | str | None) -> dict[str, str]:
    """``["boring=/x/libcrypto.so", ...]`` (or one comma-separated string) -> {name: path}.
    Names are letters, digits, ``-``, ``_`` and ``.`` (they become IR symbol prefixes)."""
    if not specs:
        return {}
    items = specs.split(",") if isinstance(specs, str) else list(specs)
    out: dict[str, str] = {}
    for item in items:
        name, eq, path = item.strip().partition("=")
        if not eq or not name or not path:
            raise ValueError(f"--peer wants NAME=/path/to/libcrypto.so, got {item!r}")
        if not re.fullmatch(r"[A-Za-z0-9_.-]+", name):
            raise ValueError(f"peer name {name!r}: use letters, digits, '-', '_', '.'")
        if name in out:
            raise ValueError(f"peer {name!r} given twice")
        out[name] = path
    return out


def gcm_path(caps: tuple[int, int] | None, version: str) -> str:
    """The AES-GCM seal path of aws-lc (and BoringSSL before its VAES-AVX2 code) for an
    effective capability vector (see the module docstring)."""
    if caps is None:
        return "unknown (OPENSSL_ia32cap_P not readable)"
    w0, w1 = caps
    aes, clmul, avx, movbe = (bool(w0 >> b & 1) for b in (57, 33, 60, MOVBE_BIT))
    if aes and w1 & VAES_W1 and w1 & VPCLMUL_W1 and w1 & AVX512_W1 == AVX512_W1:
        path = "aes_gcm_encrypt_avx512 (VAES + VPCLMULQDQ, AVX-512)"
    elif aes and clmul and avx and movbe:
        path = "aesni_gcm_encrypt (AES-NI + AVX stitched, 6 blocks/iter)"
    elif aes:
        path = "AES-NI CTR + " + ("CLMUL GHASH" if clmul else "table GHASH") + " (not stitched)"
    else:
        path = "vpaes / constant-time software AES (no AES-NI)"
    return f"{path} [{version}]"


@dataclass
class AeadInfo:
    name: str
    path: str
    version: str
    ia32cap_env: str | None
    caps: tuple[int, int] | None  # OPENSSL_ia32cap_P read back as (W0, W1)
    gcm_path: str
    binding: str  # "dynamic symbols" or ".symtab"


def _ir_prefix(name: str) -> str:
    return "vgb_aead_" + re.sub(r"[^A-Za-z0-9_]", "_", name) + "_"


def _harness_ir(prefix: str) -> str:
    """Three functions with the kernels' signatures, calling the peer's EVP_AEAD functions
    (IR names ``<prefix>EVP_AEAD_CTX_*``, bound with llvm.add_symbol):

    * ``<prefix>seal(ctx, nonce, nl, aad, al, inout, len, tag)``: seal_scatter in place, no
      extra_in, separate tag (the kernels' ``seal``);
    * ``<prefix>scatter(ctx, nonce, nl, aad, al, pieces, n_pieces, out, tag)``: pieces[0] to
      ``out``, pieces[1] (if any) as ``extra_in``, its ciphertext at ``out + len0`` and the
      tag right after it (``tag`` is not written: aws-lc puts extra_in's bytes and the tag in
      one buffer); at most two pieces, else -7;
    * ``<prefix>open(ctx, nonce, nl, aad, al, in, out, len, tag, tag_len)``: open_gather out
      of place (the kernels' ``open_out``).

    Each returns 0 or -1 like the kernels."""
    i8, i32, i64, p = ir.IntType(8), ir.IntType(32), ir.IntType(64), ir.PointerType()
    m = ir.Module(name=prefix + "harness")
    scatter = ir.Function(m, ir.FunctionType(i32, [p, p, p, p, i64, p, i64, p, i64, p, i64, p,
                                                   i64]), name=prefix + "EVP_AEAD_CTX_seal_scatter")
    gather = ir.Function(m, ir.FunctionType(i32, [p, p, p, i64, p, i64, p, i64, p, i64]),
                         name=prefix + "EVP_AEAD_CTX_open_gather")
    one, zero, null = ir.Constant(i32, 1), ir.Constant(i64, 0), ir.Constant(p, None)

    def ret(b: ir.IRBuilder, r: ir.Value) -> None:
        b.ret(b.select(b.icmp_signed("==", r, one), ir.Constant(i32, 0), ir.Constant(i32, -1)))

    def taglen(b: ir.IRBuilder) -> ir.Value:
        t = b.alloca(i64)
        t.type = p  # opaque pointers (llvmlite types allocas as typed ones)
        return t

    f = ir.Function(m, ir.FunctionType(i32, [p, p, i64, p, i64, p, i64, p]), name=prefix + "seal")
    ctx, nonce, nl, aad, al, buf, n, tag = f.args
    b = ir.IRBuilder(f.append_basic_block("entry"))
    ret(b, b.call(scatter, [ctx, buf, tag, taglen(b), ir.Constant(i64, 16), nonce, nl, buf, n,
                            null, zero, aad, al]))

    f = ir.Function(m, ir.FunctionType(i32, [p, p, i64, p, i64, p, i64, p, p]),
                    name=prefix + "scatter")
    ctx, nonce, nl, aad, al, pieces, npieces, out, _tag = f.args
    entry, bad, good = (f.append_basic_block(x) for x in ("entry", "bad", "good"))
    b = ir.IRBuilder(entry)
    b.cbranch(b.icmp_unsigned(">", npieces, ir.Constant(i64, 2)), bad, good)
    b.position_at_end(bad)
    b.ret(ir.Constant(i32, abi.RC_SHAPE))
    b.position_at_end(good)
    two = b.icmp_unsigned("==", npieces, ir.Constant(i64, 2))
    p0 = b.load(pieces, typ=p)
    l0 = b.load(b.gep(pieces, [ir.Constant(i64, 8)], source_etype=i8), typ=i64)
    p1 = b.select(two, b.load(b.gep(pieces, [ir.Constant(i64, 16)], source_etype=i8), typ=p),
                  null)
    l1 = b.select(two, b.load(b.gep(pieces, [ir.Constant(i64, 24)], source_etype=i8), typ=i64),
                  zero)
    out_tag = b.gep(out, [l0], source_etype=i8)
    ret(b, b.call(scatter, [ctx, out, out_tag, taglen(b), b.add(l1, ir.Constant(i64, 16)),
                            nonce, nl, p0, l0, p1, l1, aad, al]))

    f = ir.Function(m, ir.FunctionType(i32, [p, p, i64, p, i64, p, p, i64, p, i64]),
                    name=prefix + "open")
    ctx, nonce, nl, aad, al, inb, out, n, tag, tl = f.args
    b = ir.IRBuilder(f.append_basic_block("entry"))
    ret(b, b.call(gather, [ctx, out, nonce, nl, inb, n, tag, tl, aad, al]))
    for fn in m.functions:
        if not fn.is_declaration:
            fn.attributes.add("noinline")
    return str(m)


class AeadPeer:
    """One EVP_AEAD library in this process: its functions as ctypes callables (``fns``), the
    harness compiled at ``seal_address`` / ``scatter_address`` / ``open_address``, a context
    per key, and ``info`` (version, effective capability vector, GCM path)."""

    def __init__(self, name: str, path: str | None = None):
        self.name = name
        self.path = path or awscrt_module()
        what = f"{name} peer skipped"
        try:
            lib = ctypes.CDLL(self.path)
        except OSError as e:
            raise PeerUnavailable(f"{what}: cannot load {self.path!r} ({e})") from None
        self._lib = lib  # keeps it mapped
        names = [*_AEAD, *_OPTIONAL]
        addrs: dict[str, int] = {}
        for n in names:
            try:
                addrs[n] = ctypes.cast(getattr(lib, n), ctypes.c_void_p).value or 0
            except AttributeError:
                continue
        binding = "dynamic symbols"
        if any(n not in addrs for n in _AEAD) or "OPENSSL_ia32cap_P" not in addrs:
            try:
                local = elf.runtime_addresses(self.path, [n for n in names if n not in addrs])
            except (OSError, elf.ElfError) as e:
                local = {}
                why = str(e)
            else:
                why = "not in its .symtab either"
            addrs.update(local)
            if local and any(n in local for n in _AEAD):
                binding = ".symtab"
            missing = [n for n in _AEAD if n not in addrs]
            if missing:
                raise PeerUnavailable(f"{what}: {self.path} exports no {', '.join(missing)} "
                                      f"({why}); an EVP_AEAD library (BoringSSL, aws-lc) "
                                      "is needed")
        self.addresses = addrs
        self.fns: dict[str, Callable] = {n: ctypes.CFUNCTYPE(res, *args)(addrs[n])
                                         for n, (res, args) in _AEAD.items()}
        if "CRYPTO_library_init" in addrs:  # runs OPENSSL_cpuid_setup once (CRYPTO_once)
            ctypes.CFUNCTYPE(None)(addrs["CRYPTO_library_init"])()
        self._ctx: dict[bytes, int] = {}
        self.seal(bytes(16), bytes(12), b"", b"\0")  # a library without it initialises here
        version = self._version()
        caps = self._caps()
        env = os.environ.get("OPENSSL_ia32cap")
        if env and caps is not None:
            cleared = _cleared_bits(env)
            on = [f for f, (w, bit) in OPENSSL_BITS.items() if cleared[w] >> bit & 1 and
                  caps[w] >> bit & 1]
            if on:
                raise PeerUnavailable(f"{what}: OPENSSL_ia32cap={env} did not take effect "
                                      f"({', '.join(on)} still set in OPENSSL_ia32cap_P): "
                                      "it would run unmasked")
        self.info = AeadInfo(name, self.path, version, env, caps, gcm_path(caps, version),
                             binding)
        prefix = _ir_prefix(name)
        for n in ("EVP_AEAD_CTX_seal_scatter", "EVP_AEAD_CTX_open_gather"):
            llvm.add_symbol(prefix + n, addrs[n])
        jit.init()
        self.library = jit.compile_ir(prefix + "harness", _harness_ir(prefix), "")
        self.seal_address = self.library.address(prefix + "seal")
        self.scatter_address = self.library.address(prefix + "scatter")
        self.open_address = self.library.address(prefix + "open")

    def _version(self) -> str:
        a = self.addresses
        if "awslc_version_string" in a:
            v = ctypes.CFUNCTYPE(ctypes.c_char_p)(a["awslc_version_string"])()
            return (v or b"aws-lc").decode()
        if "OpenSSL_version" in a:
            v = ctypes.CFUNCTYPE(ctypes.c_char_p, ctypes.c_int)(a["OpenSSL_version"])(0)
            return (v or b"unknown").decode()
        return "unknown EVP_AEAD library"

    def _caps(self) -> tuple[int, int] | None:
        at = self.addresses.get("OPENSSL_ia32cap_P")
        if not at:
            return None
        p = (ctypes.c_uint32 * 4).from_address(at)
        return p[0] | p[1] << 32, p[2] | p[3] << 32

    def context(self, key: bytes) -> int:
        """An EVP_AEAD_CTX for AES-GCM with this key and a 16-byte tag (set once per key)."""
        c = self._ctx.get(key)
        if c is None:
            aead = {16: "EVP_aead_aes_128_gcm", 24: "EVP_aead_aes_192_gcm",
                    32: "EVP_aead_aes_256_gcm"}[len(key)]
            c = self.fns["EVP_AEAD_CTX_new"](self.fns[aead](), key, len(key), 16)
            if not c:
                raise PeerUnavailable(f"{self.name} peer skipped: EVP_AEAD_CTX_new failed")
            self._ctx[key] = c
        return c

    def seal(self, key: bytes, nonce: bytes, aad: bytes, data: bytes) -> bytes:
        """ciphertext || tag by ``EVP_AEAD_CTX_seal``."""
        out = ctypes.create_string_buffer(len(data) + 16)
        n = ctypes.c_size_t()
        if self.fns["EVP_AEAD_CTX_seal"](self.context(key), out, ctypes.byref(n), len(out),
                                         nonce, len(nonce), data, len(data), aad, len(aad)) != 1:
            raise RuntimeError(f"{self.name}: EVP_AEAD_CTX_seal failed")
        return out.raw[: n.value]

    def seal_scatter(self, key: bytes, nonce: bytes, aad: bytes, data: bytes, extra: bytes
                     ) -> bytes:
        """ciphertext of data || extra, then the tag, by ``EVP_AEAD_CTX_seal_scatter``."""
        out = ctypes.create_string_buffer(max(len(data), 1))
        tag = ctypes.create_string_buffer(len(extra) + 16)
        n = ctypes.c_size_t()
        if self.fns["EVP_AEAD_CTX_seal_scatter"](
                self.context(key), out, tag, ctypes.byref(n), len(tag), nonce, len(nonce), data,
                len(data), extra or None, len(extra), aad, len(aad)) != 1:
            raise RuntimeError(f"{self.name}: EVP_AEAD_CTX_seal_scatter failed")
        return out.raw[: len(data)] + tag.raw[: n.value]

    def open(self, key: bytes, nonce: bytes, aad: bytes, sealed: bytes) -> bytes | None:
        """The plaintext by ``EVP_AEAD_CTX_open`` (None on a wrong tag)."""
        out = ctypes.create_string_buffer(max(len(sealed), 1))
        n = ctypes.c_size_t()
        ok = self.fns["EVP_AEAD_CTX_open"](self.context(key), out, ctypes.byref(n), len(out),
                                           nonce, len(nonce), sealed, len(sealed), aad, len(aad))
        return out.raw[: n.value] if ok == 1 else None


def _cleared_bits(env: str) -> tuple[int, int]:
    """The bits an ``OPENSSL_ia32cap`` value clears (``~0x..`` words), as (W0, W1)."""
    words = [0, 0]
    for i, part in enumerate(env.split(":")[:2]):
        part = part.strip()
        if part.startswith("~"):
            try:
                words[i] = int(part[1:], 0)
            except ValueError:
                pass
    return words[0], words[1]


@functools.cache
def peer(name: str, path: str | None = None) -> AeadPeer:
    """This process's EVP_AEAD peer ``name`` (raises PeerUnavailable with a clear message)."""
    return AeadPeer(name, path)
