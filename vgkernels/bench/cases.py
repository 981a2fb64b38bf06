"""What a sweep times: case specifications (plain data, sent to worker processes) and the
concrete cases (buffers, argument blocks) built from them in the measuring process.

Operations (``op``):

=================  ==============================================================================
seal               kernel seal, in place
gather             kernel seal_gather from the pieces, out of place
copy_ip            vgb_copy_ip: memcpy the pieces into the output, then kernel seal in place
two_slice          kernel seal_two_slice (p0, then at most one byte); only backends exporting it
open_out           kernel open_out of a valid ciphertext (out of place: in place, the second call
                   would fail the tag and time the wipe path instead)
ctr32              kernel ctr32 keystream over zeros (AES alone: the roofline)
ghash              kernel ghash over the blocks
encrypt_blocks     kernel encrypt_blocks (stitched CTR + GHASH, no setup or tag)
openssl            OpenSSL EVP seal in place, key set once (init IV, AAD, update, final, get tag)
openssl_copy       vgb_copy_ip with OpenSSL's seal: memcpy the pieces, then EVP seal in place
openssl4_seal      the same EVP seal in place, natively, with the OpenSSL the cryptography wheel
                   bundles (4.0.x: VAES/AVX-512 GCM), found in its .symtab (peers.BundledOpenSSL)
openssl4_copy      vgb_copy_ip with the bundled OpenSSL's seal
aead_seal          an EVP_AEAD peer (``peer``: aws-lc from the awscrt wheel, or a library given by
                   path): EVP_AEAD_CTX_seal_scatter in place, separate tag (vgkernels.bench.aead)
aead_scatter       the peer's seal_scatter with the second piece as ``extra_in``: its own gather
aead_copy          vgb_copy_ip with the peer's seal: memcpy the pieces, then seal in place
aead_open          the peer's EVP_AEAD_CTX_open_gather, out of place (like open_out)
cryptography_py    cryptography's AESGCM(key).encrypt(nonce, data, aad), timed in Python: it
                   includes the Python call and the output allocation
=================  ==============================================================================

Shapes (how the text is split into pieces; ``n`` is the nominal size):

* ``one``: one piece of n bytes;
* ``n+1``: n bytes, then 1 byte (the TLS record shape: payload, then content type);
* ``16+rest``: 16 bytes, then n - 16;
* ``1+rest``: 1 byte, then n - 1.

``aligned`` is True when every piece but the last ends on a block boundary (a single piece is
aligned).  ``bytes`` is the whole text (n + 1 for ``n+1``), ``blocks`` = ceil(bytes / 16).
"""

from __future__ import annotations

import ctypes
import dataclasses
import struct
from dataclasses import asdict, dataclass
from typing import Any

from .. import abi
from ..backends import Variant, get
from .driver import Case, Driver

KERNEL_OPS = ("seal", "gather", "copy_ip", "two_slice", "open_out", "ctr32", "ghash",
              "encrypt_blocks")
OPENSSL_OPS = ("openssl", "openssl_copy")
OPENSSL4_OPS = ("openssl4_seal", "openssl4_copy")  # the cryptography wheel's OpenSSL, native
AEAD_OPS = ("aead_seal", "aead_scatter", "aead_copy", "aead_open")  # CaseSpec.peer names it
PY_OPS = ("cryptography_py",)
OPS = KERNEL_OPS + OPENSSL_OPS + OPENSSL4_OPS + AEAD_OPS + PY_OPS
PIECE_OPS = ("gather", "copy_ip", "two_slice", "openssl_copy", "openssl4_copy", "aead_scatter",
             "aead_copy")  # any shape
BLOCK_OPS = ("ctr32", "ghash", "encrypt_blocks")  # n must be a multiple of 16
SHAPES = ("one", "n+1", "16+rest", "1+rest")

_ABI_OP = {"seal": "seal", "gather": "seal_gather", "two_slice": "seal_two_slice",
           "open_out": "open_out", "ctr32": "ctr32", "ghash": "ghash",
           "encrypt_blocks": "encrypt_blocks"}


# The Variant fields a case carries (and the rows show), e.g. tail, group, stitch_min, skew.
VARIANT_PARAMS: tuple[str, ...] = tuple(f.name for f in dataclasses.fields(Variant)
                                        if f.name != "extra")


def variant_params(v: Variant) -> tuple[tuple[str, Any], ...]:
    """The explicitly set parameters of a variant (unset ones take the backend's default)."""
    return tuple((f, getattr(v, f)) for f in VARIANT_PARAMS if getattr(v, f) is not None)


class Skip(Exception):
    """This case cannot run here (e.g. the kernel does not export the op); the sweep goes on."""


class KernelError(RuntimeError):
    """A case gave a wrong result or return code: reported, never timed."""


def impl_of(op: str, peer: str | None = None) -> str:
    """Which implementation an op times: vgkernels, a peer (openssl, openssl4, aead:
    ``peer`` names it) or cryptography."""
    if op in AEAD_OPS:
        return peer or "aead"
    if op in OPENSSL_OPS:
        return "openssl"
    if op in OPENSSL4_OPS:
        return "openssl_bundled"
    return "cryptography" if op in PY_OPS else "vgkernels"


def pieces(shape: str, n: int) -> list[int]:
    """Piece lengths of a shape at nominal size n."""
    if shape == "one":
        return [n]
    if shape == "n+1":
        return [n, 1]
    if shape == "16+rest":
        if n <= 16:
            raise ValueError("16+rest needs n > 16")
        return [16, n - 16]
    if shape == "1+rest":
        if n <= 1:
            raise ValueError("1+rest needs n > 1")
        return [1, n - 1]
    raise ValueError(f"unknown shape {shape!r}; known: {', '.join(SHAPES)}")


@dataclass(frozen=True)
class CaseSpec:
    """One case as plain data.  For peers, ``backend`` names the vgkernels backend whose
    features the peer's process is masked to."""

    op: str
    n: int
    backend: str
    shape: str = "one"
    vparams: tuple[tuple[str, Any], ...] = ()  # Variant fields set (others: backend default)
    key_len: int = 16
    aad_len: int = 13
    nonce_len: int = 12
    peer: str | None = None  # the EVP_AEAD peer's name (AEAD_OPS only)

    def __post_init__(self) -> None:
        if self.op not in OPS:
            raise ValueError(f"unknown op {self.op!r}; known: {', '.join(OPS)}")
        if (self.op in AEAD_OPS) != (self.peer is not None):
            raise ValueError(f"op {self.op}: peer must be given exactly for {AEAD_OPS}")
        if self.shape != "one" and self.op not in PIECE_OPS:
            raise ValueError(f"op {self.op} takes shape 'one' only")
        if self.op in BLOCK_OPS and self.n % 16:
            raise ValueError(f"op {self.op} needs n a multiple of 16, got {self.n}")
        pieces(self.shape, self.n)

    @property
    def impl(self) -> str:
        """The implementation this case times (see :func:`impl_of`)."""
        return impl_of(self.op, self.peer)

    def variant(self) -> Variant:
        """The resolved kernel Variant of this case's backend."""
        return Variant(**dict(self.vparams)).resolved(get(self.backend))

    def to_dict(self) -> dict[str, Any]:
        """Plain values (JSON) of this spec, for a worker process."""
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> CaseSpec:
        """The spec :meth:`to_dict` gave (tuples restored from JSON lists)."""
        d = dict(d)
        d["vparams"] = tuple((k, v) for k, v in d.get("vparams", ()))  # JSON gives lists
        return cls(**d)

    def label(self) -> dict[str, Any]:
        """The row columns that identify this case."""
        ps = pieces(self.shape, self.n)
        total = sum(ps)
        lab: dict[str, Any] = {"impl": self.impl, "backend": self.backend}
        if self.impl == "vgkernels":
            v = self.variant()
            lab.update(variant=v.tag(), **{f: getattr(v, f) for f in VARIANT_PARAMS})
        else:
            lab.update(variant=self.impl, **dict.fromkeys(VARIANT_PARAMS))
        lab.update(op=self.op, shape=self.shape, pieces="+".join(map(str, ps)),
                   aligned=all(p % 16 == 0 for p in ps[:-1]), n=self.n, bytes=total,
                   blocks=-(-total // 16), key_bytes=self.key_len, aad_bytes=self.aad_len,
                   nonce_bytes=self.nonce_len)
        return lab


# ------------------------------------------------------------------------------------------
# concrete cases


PAGE = 4096
# Where buffers start within a page, by role.  4K aliasing (a load whose address matches a
# pending store's in bits 0-11 waits for it) moved cases by up to 80% on Zen 5 depending on
# where the stack and the buffers fell, so nothing is left to malloc or ASLR:
# * a stream's input at 0 and its output at 2 KiB + 64: loads running ahead never alias the
#   stores still pending;
# * the stack pointer at driver.STACK_OFFSET (2560): the kernels' frames lie below it;
# * the small buffers (nonce, AAD, tag, counter, a 1-byte piece, the piece array, the argument
#   block) in 128-byte slots in [3200, 4096); the key context at 0 (it is only loaded).
# The same offsets in every run and process make results reproducible.
IN_OFFSET, OUT_OFFSET = 0, 2048 + 64
AUX_OFFSETS = tuple(3200 + 128 * j for j in range(7))

class Buf:
    """A zeroed buffer of n bytes (at least one, so it has an address) starting at
    ``page_offset`` within a page (default: 64-byte aligned, wherever malloc puts it)."""

    def __init__(self, n: int, data: bytes = b"", page_offset: int | None = None):
        self.n = n
        if page_offset is None:
            self._raw = ctypes.create_string_buffer(max(n, 1) + 64)
            self.addr = (ctypes.addressof(self._raw) + 63) & ~63
        else:
            self._raw = ctypes.create_string_buffer(max(n, 1) + PAGE + page_offset)
            self.addr = ((ctypes.addressof(self._raw) + PAGE - 1) & ~(PAGE - 1)) + page_offset
        if data:
            self.write(data)

    def write(self, data: bytes) -> None:
        """Copy ``data`` to the start of the buffer."""
        ctypes.memmove(self.addr, data, len(data))

    def read(self, n: int | None = None) -> bytes:
        """The first ``n`` bytes (default: all of them)."""
        return ctypes.string_at(self.addr, self.n if n is None else n)


class Placer:
    """Buffers of one case at fixed page offsets by role ("in", "out", or small "aux")."""

    def __init__(self) -> None:
        self._aux = 0

    def __call__(self, n: int, data: bytes = b"", role: str = "aux") -> Buf:
        if role == "in":
            off = IN_OFFSET
        elif role == "out":
            off = OUT_OFFSET
        else:
            off = AUX_OFFSETS[self._aux % len(AUX_OFFSETS)]
            self._aux += 1
        return Buf(n, data, off)


def message(n: int, seed: int = 0) -> bytes:
    """``n`` bytes of a deterministic test message (the same in every process)."""
    return bytes((i * 167 + seed * 13 + 5) & 255 for i in range(n))


def _expected(key: bytes, nonce: bytes, aad: bytes, msg: bytes) -> bytes:
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    return AESGCM(key).encrypt(nonce, msg, aad)


def _first_diff(a: bytes, b: bytes) -> str:
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            return f"first difference at byte {i} of {len(b)} (got {x:#04x}, want {y:#04x})"
    return f"lengths differ ({len(a)} vs {len(b)})"


class Builder:
    """Builds concrete cases in the measuring process: kernels, key contexts, peers."""

    def __init__(self, drv: Driver, verify: bool = True, libcrypto: str | None = None,
                 aead_paths: dict[str, str | None] | None = None):
        self.driver = drv
        self.verify = verify
        self.libcrypto = libcrypto
        self.aead_paths = aead_paths or {}  # EVP_AEAD peer name -> path (None: awscrt's)
        self._ctx: dict[tuple[str, Variant, bytes], Buf] = {}

    # -- shared material ---------------------------------------------------------------------
    @staticmethod
    def material(spec: CaseSpec) -> tuple[bytes, bytes, bytes]:
        """(key, nonce, aad) of a case: fixed bytes, the same in every process."""
        return bytes(range(1, spec.key_len + 1)), bytes(range(spec.nonce_len)), \
            bytes(range(100, 100 + spec.aad_len))

    def kernels(self, spec: CaseSpec):  # -> vgkernels.build.Kernels
        """The compiled kernels of the case's backend and variant."""
        from ..build import kernels

        return kernels(spec.backend, spec.variant())

    def address(self, spec: CaseSpec, abi_op: str) -> int:
        """The address of one exported kernel; Skip when the backend lacks it."""
        k = self.kernels(spec)
        try:
            return k.address(abi_op)
        except KeyError:
            raise Skip(f"{k.prefix}_{abi_op} is not exported by backend {spec.backend} "
                       "(not built yet?)") from None

    def ctx(self, spec: CaseSpec) -> int:
        """A key context set up by the kernel's key_init (kept per backend, variant, key)."""
        key, _, _ = self.material(spec)
        tag = (spec.backend, spec.variant(), key)
        buf = self._ctx.get(tag)
        if buf is None:
            buf = Buf(abi.CTX_SIZE, page_offset=0)  # placed alike in every process
            res, args, _ = abi.SIGNATURES["key_init"]
            init = ctypes.CFUNCTYPE(res, *args)(self.address(spec, "key_init"))
            if init(buf.addr, key, len(key)) != 0:
                raise KernelError(f"{spec.backend}: key_init failed for a {len(key)}-byte key")
            self._ctx[tag] = buf
        return buf.addr

    def openssl(self):  # -> peers.OpenSSL
        """The system OpenSSL peer (libcrypto through its EVP interface)."""
        from . import peers

        return peers.openssl(self.libcrypto)

    def bundled(self):  # -> peers.BundledOpenSSL
        """The OpenSSL bundled in the cryptography wheel, called natively."""
        from . import peers

        return peers.bundled_openssl()

    def peer(self, op: str):
        """The OpenSSL that times ``op``: the bundled one for its ops, else the system's."""
        return self.bundled() if op in OPENSSL4_OPS else self.openssl()

    def aead(self, name: str):  # -> aead.AeadPeer
        from . import aead

        if name not in self.aead_paths:
            raise Skip(f"EVP_AEAD peer {name!r} is not configured in this process")
        return aead.peer(name, self.aead_paths[name])

    # -- cases -------------------------------------------------------------------------------
    def build(self, spec: CaseSpec) -> Case:
        """A verified case (raises Skip or KernelError)."""
        key, nonce, aad = self.material(spec)
        ps = pieces(spec.shape, spec.n)
        total = sum(ps)
        msg = message(total)
        lab = spec.label()
        buf_ = Placer()
        nb, ab = buf_(len(nonce), nonce), buf_(len(aad), aad)
        head = [nb.addr, len(nonce), ab.addr, len(aad)]
        keep: list[object] = [nb, ab]
        want = None
        op = spec.op

        if op == "cryptography_py":
            from .peers import cryptography_encrypt

            f = cryptography_encrypt(key, nonce, aad, msg)
            if self.verify and f() != _expected(key, nonce, aad, msg):
                raise KernelError("cryptography AESGCM disagrees with itself?")
            return Case(lab, py_call=f)

        if op in ("seal", "openssl", "openssl4_seal", "aead_seal"):
            buf, tag = buf_(total, msg, "in"), buf_(16)
            keep += [buf, tag]
            if op == "seal":
                fn, first = self.address(spec, "seal"), self.ctx(spec)
            elif op == "aead_seal":
                ap = self.aead(spec.peer)
                fn, first = ap.seal_address, ap.context(key)
            else:
                ossl = self.peer(op)
                fn, first = ossl.seal_address, ossl.context(key)
            case = Case(lab, "seal", [fn, first, *head, buf.addr, total, tag.addr], keep=keep)

            def out() -> bytes:
                return buf.read() + tag.read()
            want = _expected(key, nonce, aad, msg)
        elif op in ("gather", "copy_ip", "openssl_copy", "openssl4_copy", "two_slice",
                    "aead_scatter", "aead_copy"):
            bufs = []
            off = 0
            for p in ps:  # the largest piece is the stream's input
                bufs.append(buf_(p, msg[off:off + p], "in" if p == max(ps) else "aux"))
                off += p
            # aead_scatter: extra_in's ciphertext and the tag follow the output (see aead.py)
            outb, tag = buf_(total + (16 if op == "aead_scatter" else 0), role="out"), buf_(16)
            # struct vg_piece {ptr, len}[], placed like the other small buffers
            arr = buf_(16 * len(ps), b"".join(struct.pack("<QQ", b.addr, p)
                                               for b, p in zip(bufs, ps, strict=True)))
            keep += [*bufs, outb, tag, arr]
            if op == "two_slice":
                p1, n1 = (bufs[1].addr, ps[1]) if len(ps) > 1 else (0, 0)
                if len(ps) > 2:
                    raise Skip("two_slice takes at most two pieces")
                fn = self.address(spec, "seal_two_slice")
                slots = [fn, self.ctx(spec), *head, bufs[0].addr, ps[0], p1, n1, outb.addr,
                         tag.addr]
                case = Case(lab, "seal_two_slice", slots, keep=keep)
            elif op in ("gather", "aead_scatter"):
                if op == "gather":
                    fn, first = self.address(spec, "seal_gather"), self.ctx(spec)
                else:
                    ap = self.aead(spec.peer)
                    fn, first = ap.scatter_address, ap.context(key)
                slots = [fn, first, *head, arr.addr, len(ps), outb.addr, tag.addr]
                case = Case(lab, "seal_gather", slots, keep=keep)
            else:
                if op == "copy_ip":
                    seal, first = self.address(spec, "seal"), self.ctx(spec)
                elif op == "aead_copy":
                    ap = self.aead(spec.peer)
                    seal, first = ap.seal_address, ap.context(key)
                else:
                    ossl = self.peer(op)
                    seal, first = ossl.seal_address, ossl.context(key)
                slots = [self.driver.address("vgb_copy_ip"), seal, first, *head,
                         arr.addr, len(ps), outb.addr, tag.addr]
                case = Case(lab, "copy_ip", slots, keep=keep)

            def out() -> bytes:
                if op == "aead_scatter":
                    return outb.read()
                return outb.read() + tag.read()
            want = _expected(key, nonce, aad, msg)
        elif op in ("open_out", "aead_open"):
            ct = _expected(key, nonce, aad, msg)
            inb, outb = buf_(total, ct[:total], "in"), buf_(total, role="out")
            tag = buf_(16, ct[total:])
            keep += [inb, outb, tag]
            if op == "open_out":
                fn, first = self.address(spec, "open_out"), self.ctx(spec)
            else:
                ap = self.aead(spec.peer)
                fn, first = ap.open_address, ap.context(key)
            slots = [fn, first, *head, inb.addr, outb.addr, total, tag.addr, 16]
            case = Case(lab, "open_out", slots, keep=keep)

            def out() -> bytes:
                return outb.read()
            want = msg
        elif op in ("ctr32", "ghash", "encrypt_blocks"):
            nblk = total // 16
            counter = buf_(16, nonce[:12].ljust(12, b"\0") + b"\0\0\0\x02")
            y = buf_(16)
            inb = buf_(total, b"" if op == "ctr32" else msg, "in")
            outb = buf_(total, role="out")
            keep += [counter, y, inb, outb]
            ctx = self.ctx(spec)
            fn = self.address(spec, op)
            if op == "ctr32":
                slots = [fn, ctx, counter.addr, inb.addr, outb.addr, nblk]
            elif op == "ghash":
                slots = [fn, ctx, y.addr, inb.addr, nblk]
            else:
                slots = [fn, ctx, y.addr, counter.addr, inb.addr, outb.addr, total]
            case = Case(lab, op, slots, keep=keep)
            c0 = counter.read()
            if op == "ghash":
                def out() -> bytes:
                    return y.read()
                want = _ghash(_aes_ecb(key, bytes(16)), msg)
            else:
                def out() -> bytes:
                    return outb.read()
                ks = _keystream(key, c0, nblk)
                want = ks if op == "ctr32" else bytes(a ^ b for a, b in zip(ks, msg, strict=True))
        else:  # pragma: no cover - CaseSpec validates op
            raise ValueError(op)
        blk = buf_(8 * len(case.slots))
        case.place_block(blk.addr, blk.n)
        case.keep.append(blk)

        rc = self.driver.call(case)
        if rc != 0:
            if op == "two_slice" and rc == -7:
                raise Skip(f"seal_two_slice declined the shape {lab['pieces']} (-7)")
            raise KernelError(f"{_where(lab)}: returned {rc} (expected 0)")
        if self.verify and want is not None:
            got = out()
            if got != want:
                raise KernelError(f"{_where(lab)}: wrong output, {_first_diff(got, want)}")
        return case


def _where(lab: dict[str, Any]) -> str:
    return (f"{lab['impl']} {lab['backend']} [{lab['variant']}] op={lab['op']} "
            f"shape={lab['shape']} pieces={lab['pieces']}")


def _aes_ecb(key: bytes, data: bytes) -> bytes:
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

    enc = Cipher(algorithms.AES(key), modes.ECB()).encryptor()
    return enc.update(data) + enc.finalize()


def _keystream(key: bytes, counter: bytes, nblocks: int) -> bytes:
    """E_K of counter, counter+1, ... with a 32-bit big-endian increment of the last word."""
    pre, c = counter[:12], int.from_bytes(counter[12:], "big")
    blocks = b"".join(pre + ((c + i) & 0xFFFFFFFF).to_bytes(4, "big") for i in range(nblocks))
    return _aes_ecb(key, blocks)


def _gf_mult(x: int, y: int) -> int:
    """GF(2^128) product in GCM's bit order (SP 800-38D Algorithm 1)."""
    r = 0xE1 << 120
    z, v = 0, y
    for i in range(127, -1, -1):
        if x >> i & 1:
            z ^= v
        v = (v >> 1) ^ r if v & 1 else v >> 1
    return z


def _ghash(h: bytes, data: bytes) -> bytes:
    hi, y = int.from_bytes(h, "big"), 0
    for i in range(0, len(data), 16):
        y = _gf_mult(y ^ int.from_bytes(data[i:i + 16], "big"), hi)
    return y.to_bytes(16, "big")

