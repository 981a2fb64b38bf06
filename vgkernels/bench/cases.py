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
import statistics
import struct
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from .. import abi, spec
from ..backends import get
from ..buffers import PAGE, Buf
from ..variant import NO_COLUMNS, Variant
from . import utag
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
    vparams: tuple[tuple[str, Any], ...] = ()  # Variant.given(): the fields set (others: default)
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
            lab.update(variant=v.tag(), **v.columns())
        else:
            lab.update(variant=self.impl, **NO_COLUMNS)
        lab.update(op=self.op, shape=self.shape, pieces="+".join(map(str, ps)),
                   aligned=all(p % 16 == 0 for p in ps[:-1]), n=self.n, bytes=total,
                   blocks=-(-total // 16), key_bytes=self.key_len, aad_bytes=self.aad_len,
                   nonce_bytes=self.nonce_len)
        return lab


# ------------------------------------------------------------------------------------------
# concrete cases


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

# The µtags (`utag`) of the key contexts' pages: a stream buffer with a page among them would
# evict the context's lines from L1D as it is written or read (3-37% on Zen 4 for the few
# buffers malloc places so), so the cases' streams are placed apart from them and every run
# times the kernel, not the address lottery (the targets' place_va rows time that).
HOT_TAGS: set[int] = set()

# Key contexts set up per backend, variant and key; the builder keeps the one whose seal runs
# fastest at its slowest stack offset.  On Zen 4 some contexts made every call slower at some
# stack pages: seal 1 KiB 5-13% (vaes_avx512), in one process 45% (vaes_avx2), and moving only
# the context (same stack, same buffers) restored the time.  Which pages pair goes by physical
# address (a loop storing to one page and loading another at the same page offset runs 3.6x
# slower for about one page pair in 14, a different set in every process), so no page offset
# avoids it (design notes, "Zen 4, fourteenth session").  The targets' place_ctx rows time
# what such a context costs.
CTX_CANDIDATES = 4
CTX_PROBE_BYTES = 1024
CTX_PROBE_OFFSETS = tuple(range(0, PAGE, 256))  # the stack row's offsets (targets.Profile)
CTX_PROBE_ROUNDS = 5


def alloc_apart(n: int, data: bytes = b"", page_offset: int | None = None,
                tries: int = 64) -> Buf:
    """`Buf.alloc`, again while a page of the buffer shares a µtag with HOT_TAGS (the
    rejected buffers are held until the end, so malloc does not hand them back)."""
    held = []
    for _ in range(tries):
        b = Buf.alloc(n, data, page_offset)
        if not utag.page_tags(b.addr, n) & HOT_TAGS:
            return b
        held.append(b)
    return b


class Placer:
    """Buffers of one case at fixed page offsets by role ("in", "out", or small "aux").
    ``shift``: bytes added to the stream buffers' offsets (5: a TLS payload after its record
    header, so no vector load or store of the text is aligned)."""

    def __init__(self, shift: int = 0) -> None:
        self._aux, self.shift = 0, shift

    def __call__(self, n: int, data: bytes = b"", role: str = "aux") -> Buf:
        if role == "in":
            off = IN_OFFSET + self.shift
        elif role == "out":
            off = OUT_OFFSET + self.shift
        else:
            off = AUX_OFFSETS[self._aux % len(AUX_OFFSETS)]
            self._aux += 1
            return Buf.alloc(n, data, off)
        return alloc_apart(n, data, off)


def share_buffers(ref: Case, case: Case) -> None:
    """Point ``case``'s buffer arguments (those at the start of a buffer it keeps) at ``ref``'s
    in the same argument slots, and write its argument block again.  ``ref`` must be a case of
    the same operation and shape whose buffers are at least as long."""
    owned = {b.addr for b in case.keep if isinstance(b, Buf)}
    case.slots = [r if i and c in owned else c
                  for i, (r, c) in enumerate(zip(ref.slots, case.slots, strict=True))]
    case.place_block(case.address(), 8 * len(case.slots))


def message(n: int, seed: int = 0) -> bytes:
    """``n`` bytes of a deterministic test message (the same in every process)."""
    return bytes((i * 167 + seed * 13 + 5) & 255 for i in range(n))


class Builder:
    """Builds concrete cases in the measuring process: kernels, key contexts, peers."""

    def __init__(self, drv: Driver, verify: bool = True, libcrypto: str | None = None,
                 aead_paths: dict[str, str | None] | None = None, shift: int = 0,
                 ctx_candidates: int = CTX_CANDIDATES):
        """``shift``: see `Placer`; ``ctx_candidates``: see CTX_CANDIDATES (1: the first
        context, untimed)."""
        self.driver = drv
        self.shift = shift
        self.verify = verify
        self.libcrypto = libcrypto
        self.aead_paths = aead_paths or {}  # EVP_AEAD peer name -> path (None: awscrt's)
        self._ctx: dict[tuple[str, Variant, bytes], Buf] = {}
        self.ctx_candidates = ctx_candidates if drv is not None else 1  # untimed without one
        # per context: each candidate's slowest seal over the slowest of the kept one
        self.ctx_trials: dict[tuple[str, Variant, bytes], list[float]] = {}

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
        """A key context set up by the kernel's key_init (kept per backend, variant, key): the
        fastest of ``ctx_candidates`` at its slowest stack offset (`_placed_ctx`)."""
        key, _, _ = self.material(spec)
        tag = (spec.backend, spec.variant(), key)
        buf = self._ctx.get(tag)
        if buf is None:
            buf = self._placed_ctx(spec, tag, key)
        return buf.addr

    def new_ctx(self, spec: CaseSpec) -> Buf:
        """A key context of the case's backend and key, set up on fresh pages."""
        key, _, _ = self.material(spec)
        buf = Buf.alloc(abi.CTX_SIZE, page_offset=0)  # placed alike in every process
        res, args, _ = abi.SIGNATURES["key_init"]
        init = ctypes.CFUNCTYPE(res, *args)(self.address(spec, "key_init"))
        if init(buf.addr, key, len(key)) != 0:
            raise KernelError(f"{spec.backend}: key_init failed for a {len(key)}-byte key")
        return buf

    def _placed_ctx(self, spec: CaseSpec, tag: tuple, key: bytes) -> Buf:
        """The fastest of ``ctx_candidates`` contexts: a seal of CTX_PROBE_BYTES with each at
        every stack offset of CTX_PROBE_OFFSETS, the slowest offset compared (see
        CTX_CANDIDATES).  The candidates' µtags are hot while they are timed (their cases'
        buffers avoid them); only the kept one's stay."""
        cands = [self.new_ctx(spec) for _ in range(self.ctx_candidates)]
        added = set().union(*(utag.page_tags(c.addr, abi.CTX_SIZE) for c in cands)) - HOT_TAGS
        HOT_TAGS.update(added)
        try:
            if len(cands) > 1:
                probe = CaseSpec("seal", CTX_PROBE_BYTES, spec.backend, vparams=spec.vparams,
                                 key_len=spec.key_len, aad_len=spec.aad_len,
                                 nonce_len=spec.nonce_len)
                cases = []
                for j, c in enumerate(cands):
                    self._ctx[tag] = c
                    for off in CTX_PROBE_OFFSETS:
                        case = self.build(probe)
                        case.stack_offset, case.label = off, {"candidate": j}
                        cases.append(case)
                t = self.driver.measure(cases, k=CTX_PROBE_ROUNDS, probes=False, rotate=True)
                worst = [0.0] * len(cands)
                for m in t.results:
                    j = m.label["candidate"]
                    worst[j] = max(worst[j], statistics.median(m.ticks))
                best = min(range(len(cands)), key=worst.__getitem__)
                self.ctx_trials[tag] = [w / worst[best] for w in worst]
                cands = [cands[best]]
        finally:
            self._ctx.pop(tag, None)
        HOT_TAGS.difference_update(added - utag.page_tags(cands[0].addr, abi.CTX_SIZE))
        self._ctx[tag] = cands[0]
        return cands[0]

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

    def target(self, spec: CaseSpec, kernel_op: str, peer_attr: str) -> tuple[int, int]:
        """(function, first argument) of the implementation a case times: the kernel's
        ``kernel_op`` and its key context, or the peer's ``peer_attr`` and its context."""
        if spec.impl == "vgkernels":
            return self.address(spec, kernel_op), self.ctx(spec)
        key, _, _ = self.material(spec)
        p = self.aead(spec.peer) if spec.op in AEAD_OPS else self.peer(spec.op)
        return getattr(p, peer_attr), p.context(key)

    # -- cases -------------------------------------------------------------------------------
    def build(self, spec: CaseSpec) -> Case:
        """A verified case (raises Skip or KernelError)."""
        if spec.impl == "vgkernels":
            self.ctx(spec)  # first: the case's buffers are placed apart from it
        made = OP_BUILDERS[spec.op](self, _Setup.of(spec, self.shift))
        case = made.case
        # its key context (the kernel's or a peer's) belongs to this builder: a case built by
        # a builder nobody else holds must keep it, or the context's memory is freed and reused
        # under the case (seen as wrong round keys in tests/test_targets.py)
        case.keep.append(self)
        if case.py_call is not None:  # timed in Python: no argument block, no return code
            if self.verify and made.out() != made.want:
                raise KernelError(f"{_where(case.label)}: disagrees with vgkernels.spec")
            return case
        blk = made.setup.place(8 * len(case.slots))
        case.place_block(blk.addr, blk.n)
        case.keep.append(blk)
        rc = self.driver.call(case)
        if rc != abi.RC_OK:
            if spec.op == "two_slice" and rc == abi.RC_SHAPE:
                raise Skip(f"seal_two_slice declined the shape {case.label['pieces']} ({rc})")
            raise KernelError(f"{_where(case.label)}: returned {rc} (expected 0)")
        if self.verify:
            got = made.out()
            if got != made.want:
                raise KernelError(f"{_where(case.label)}: wrong output, "
                                  f"{_first_diff(got, made.want)}")
        return case


# -- one builder per operation -----------------------------------------------------------------
# Each takes the Builder and the case's common setup (material, message, nonce and AAD placed)
# and returns the case, how to read its output and what the output must be (from vgkernels.spec).
# The order in which a builder places its buffers decides their page offsets: keep it.


@dataclass
class _Setup:
    spec: CaseSpec
    key: bytes
    nonce: bytes
    aad: bytes
    ps: list[int]  # piece lengths
    msg: bytes  # the whole text
    place: Placer
    head: list[int]  # nonce, nonce length, AAD, AAD length: the arguments every seal shares
    keep: list[object] = field(default_factory=list)

    @classmethod
    def of(cls, spec: CaseSpec, shift: int = 0) -> _Setup:
        key, nonce, aad = Builder.material(spec)
        ps = pieces(spec.shape, spec.n)
        place = Placer(shift)
        nb, ab = place(len(nonce), nonce), place(len(aad), aad)
        return cls(spec, key, nonce, aad, ps, message(sum(ps)), place,
                   [nb.addr, len(nonce), ab.addr, len(aad)], [nb, ab])

    @property
    def total(self) -> int:
        return len(self.msg)

    def buf(self, n: int, data: bytes = b"", role: str = "aux") -> Buf:
        """A placed buffer the case keeps alive."""
        b = self.place(n, data, role)
        self.keep.append(b)
        return b

    def sealed(self) -> bytes:
        """Ciphertext and tag of the message: what every seal must produce."""
        ct, tag = spec.seal(self.key, self.nonce, self.msg, self.aad)
        return ct + tag


@dataclass
class _Made:
    case: Case
    out: Callable[[], bytes]  # the case's output after one call
    want: bytes
    setup: _Setup


def _seal(b: Builder, s: _Setup) -> _Made:
    """seal / openssl / openssl4_seal / aead_seal: one piece, sealed in place."""
    buf, tag = s.buf(s.total, s.msg, "in"), s.buf(16)
    fn, first = b.target(s.spec, "seal", "seal_address")
    case = Case(s.spec.label(), "seal", [fn, first, *s.head, buf.addr, s.total, tag.addr],
                keep=s.keep)
    return _Made(case, lambda: buf.read() + tag.read(), s.sealed(), s)


def _piece_bufs(s: _Setup, out_extra: int = 0) -> tuple[list[Buf], Buf, Buf, Buf]:
    """The pieces (the largest is the stream's input), the output (``out_extra`` bytes
    longer), the tag and the struct vg_piece {ptr, len}[] array."""
    bufs, off = [], 0
    for p in s.ps:
        bufs.append(s.buf(p, s.msg[off:off + p], "in" if p == max(s.ps) else "aux"))
        off += p
    outb, tag = s.buf(s.total + out_extra, role="out"), s.buf(16)
    arr = s.buf(16 * len(s.ps), b"".join(struct.pack("<QQ", b.addr, p)
                                        for b, p in zip(bufs, s.ps, strict=True)))
    return bufs, outb, tag, arr


def _gather(b: Builder, s: _Setup) -> _Made:
    """gather / aead_scatter: the implementation's own gather from the pieces."""
    scatter = s.spec.op == "aead_scatter"
    # aead_scatter: extra_in's ciphertext and the tag follow the output (see aead.py)
    _, outb, tag, arr = _piece_bufs(s, 16 if scatter else 0)
    fn, first = b.target(s.spec, "seal_gather", "scatter_address")
    slots = [fn, first, *s.head, arr.addr, len(s.ps), outb.addr, tag.addr]
    case = Case(s.spec.label(), "seal_gather", slots, keep=s.keep)
    return _Made(case, outb.read if scatter else lambda: outb.read() + tag.read(), s.sealed(), s)


def _copy(b: Builder, s: _Setup) -> _Made:
    """copy_ip / openssl_copy / openssl4_copy / aead_copy: the driver's vgb_copy_ip copies
    the pieces into the output, then calls the implementation's seal in place there."""
    _, outb, tag, arr = _piece_bufs(s)
    seal, first = b.target(s.spec, "seal", "seal_address")
    slots = [b.driver.address("vgb_copy_ip"), seal, first, *s.head, arr.addr, len(s.ps),
             outb.addr, tag.addr]
    case = Case(s.spec.label(), "copy_ip", slots, keep=s.keep)
    return _Made(case, lambda: outb.read() + tag.read(), s.sealed(), s)


def _two_slice(b: Builder, s: _Setup) -> _Made:
    """two_slice: the first piece, then at most one more (kernels exporting it only)."""
    bufs, outb, tag, _ = _piece_bufs(s)
    p1, n1 = (bufs[1].addr, s.ps[1]) if len(s.ps) > 1 else (0, 0)
    if len(s.ps) > 2:
        raise Skip("two_slice takes at most two pieces")
    slots = [b.address(s.spec, "seal_two_slice"), b.ctx(s.spec), *s.head, bufs[0].addr,
             s.ps[0], p1, n1, outb.addr, tag.addr]
    case = Case(s.spec.label(), "seal_two_slice", slots, keep=s.keep)
    return _Made(case, lambda: outb.read() + tag.read(), s.sealed(), s)


def _open(b: Builder, s: _Setup) -> _Made:
    """open_out / aead_open: a valid ciphertext opened out of place."""
    ct = s.sealed()
    inb, outb = s.buf(s.total, ct[:s.total], "in"), s.buf(s.total, role="out")
    tag = s.buf(16, ct[s.total:])
    fn, first = b.target(s.spec, "open_out", "open_address")
    slots = [fn, first, *s.head, inb.addr, outb.addr, s.total, tag.addr, 16]
    return _Made(Case(s.spec.label(), "open_out", slots, keep=s.keep), outb.read, s.msg, s)


def _blocks(b: Builder, s: _Setup, plain: bool) -> tuple[Buf, Buf, Buf, Buf, int]:
    """(counter, hash state y, input, output, context) of the whole-block kernels; the
    counter block starts at 2, as after a 96-bit nonce's J0."""
    counter = s.buf(16, s.nonce[:12].ljust(12, b"\0") + b"\0\0\0\x02")
    y = s.buf(16)
    inb = s.buf(s.total, s.msg if plain else b"", "in")
    outb = s.buf(s.total, role="out")
    return counter, y, inb, outb, b.ctx(s.spec)


def _ctr32(b: Builder, s: _Setup) -> _Made:
    """ctr32: the keystream over zeros (AES alone: the roofline)."""
    counter, _, inb, outb, ctx = _blocks(b, s, plain=False)
    slots = [b.address(s.spec, "ctr32"), ctx, counter.addr, inb.addr, outb.addr, s.total // 16]
    want = spec.ctr32(s.key, counter.read(), bytes(s.total))
    return _Made(Case(s.spec.label(), "ctr32", slots, keep=s.keep), outb.read, want, s)


def _ghash(b: Builder, s: _Setup) -> _Made:
    """ghash: the hash of the blocks, from a zero state."""
    _, y, inb, _, ctx = _blocks(b, s, plain=True)
    slots = [b.address(s.spec, "ghash"), ctx, y.addr, inb.addr, s.total // 16]
    want = spec.ghash(spec.hash_subkey(s.key), s.msg)
    return _Made(Case(s.spec.label(), "ghash", slots, keep=s.keep), y.read, want, s)


def _encrypt_blocks(b: Builder, s: _Setup) -> _Made:
    """encrypt_blocks: the stitched CTR + GHASH, no setup or tag."""
    counter, y, inb, outb, ctx = _blocks(b, s, plain=True)
    slots = [b.address(s.spec, "encrypt_blocks"), ctx, y.addr, counter.addr, inb.addr,
             outb.addr, s.total]
    want = spec.ctr32(s.key, counter.read(), s.msg)
    return _Made(Case(s.spec.label(), "encrypt_blocks", slots, keep=s.keep), outb.read, want, s)


def _cryptography_py(b: Builder, s: _Setup) -> _Made:
    """cryptography_py: AESGCM.encrypt called from Python."""
    from .peers import cryptography_encrypt

    f = cryptography_encrypt(s.key, s.nonce, s.aad, s.msg)
    return _Made(Case(s.spec.label(), py_call=f), f, s.sealed(), s)


OP_BUILDERS: dict[str, Callable[[Builder, _Setup], _Made]] = {
    "seal": _seal, "openssl": _seal, "openssl4_seal": _seal, "aead_seal": _seal,
    "gather": _gather, "aead_scatter": _gather,
    "copy_ip": _copy, "openssl_copy": _copy, "openssl4_copy": _copy, "aead_copy": _copy,
    "two_slice": _two_slice,
    "open_out": _open, "aead_open": _open,
    "ctr32": _ctr32, "ghash": _ghash, "encrypt_blocks": _encrypt_blocks,
    "cryptography_py": _cryptography_py,
}
assert set(OP_BUILDERS) == set(OPS), "every op needs a builder"


def _first_diff(a: bytes, b: bytes) -> str:
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            return f"first difference at byte {i} of {len(b)} (got {x:#04x}, want {y:#04x})"
    return f"lengths differ ({len(a)} vs {len(b)})"


def _where(lab: dict[str, Any]) -> str:
    return (f"{lab['impl']} {lab['backend']} [{lab['variant']}] op={lab['op']} "
            f"shape={lab['shape']} pieces={lab['pieces']}")
