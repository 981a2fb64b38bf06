"""LLVM IR -> optimised machine code with llvmlite: target machines, a disk cache of objects,
loading into the process, and the IR / assembly text of what was built.

LLVM's machine scheduler undoes the interleaving the generators write (it hoists all the
multiplies, then runs each block's AES rounds back to back), so it is switched off before the
first target machine is made.  The option is process-wide; ``VG_MISCHED=1`` keeps it on for
experiments, and it is part of the cache key.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import stat
import tempfile
import threading
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import llvmlite
import llvmlite.binding as llvm

from . import cpu

CODEGEN_VERSION = "2"  # bump when the pass pipeline or options below change
_lock = threading.Lock()


@functools.cache
def init() -> bool:
    """Initialise LLVM for this host (once); returns whether the machine scheduler is on."""
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    llvm.initialize_native_asmparser()  # inline assembly (the bench's loop replays)
    misched = os.environ.get("VG_MISCHED", "0") == "1"
    if not misched:
        llvm.set_option("", "-enable-misched=false")
    return misched


# -- the disk cache -------------------------------------------------------------------------------
# Cached objects are loaded as machine code into every process that uses them, so the cache
# trusts nothing it did not write: the directory and each file must be this user's and
# writable by nobody else, and each file carries a digest of its cache key and contents,
# checked before it is loaded.  A file that fails is removed and rebuilt, with a warning.

_MAGIC = b"VGKO1\n"  # then 32 bytes sha256(key || object), 8 bytes length, the object
_HEADER = len(_MAGIC) + 32 + 8


class CacheWarning(RuntimeWarning):
    """The kernel cache was skipped or repaired (the message says which file and why)."""


_warned: set[str] = set()


def _warn(msg: str) -> None:
    if msg not in _warned:
        _warned.add(msg)
        warnings.warn(msg, CacheWarning, stacklevel=4)


def _unsafe(st: os.stat_result) -> str | None:
    if st.st_uid != os.getuid():
        return f"owned by uid {st.st_uid}, not this user ({os.getuid()})"
    if st.st_mode & 0o022:
        return f"writable by other users (mode {stat.S_IMODE(st.st_mode):o})"
    return None


def cache_dir() -> Path | None:
    """The kernel cache ($VG_CACHE_DIR, else $XDG_CACHE_HOME/vgkernels), made private if new;
    None (no caching, with a warning) when it is not safe to load code from it."""
    d = os.environ.get("VG_CACHE_DIR")
    base = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
    p = Path(d) if d else base / "vgkernels"
    try:
        p.mkdir(mode=0o700, parents=True, exist_ok=True)
        why = _unsafe(os.stat(p))
    except OSError as exc:
        why = str(exc)
    if why is not None:
        _warn(f"kernel cache {p} not used: {why}; kernels are compiled in memory each time")
        return None
    return p


def _seal_object(key: str, obj: bytes) -> bytes:
    digest = hashlib.sha256(key.encode() + b"\0" + obj).digest()
    return _MAGIC + digest + len(obj).to_bytes(8, "little") + obj


def _open_object(key: str, data: bytes) -> bytes:
    """The object inside a cache file, or ValueError saying why it is not trustworthy."""
    if len(data) < _HEADER or not data.startswith(_MAGIC):
        raise ValueError("not a vgkernels cache file (empty, truncated or foreign)")
    n = int.from_bytes(data[len(_MAGIC) + 32:_HEADER], "little")
    obj = data[_HEADER:]
    if len(obj) != n:
        raise ValueError(f"{len(obj)} bytes of object where the header says {n} (truncated)")
    if hashlib.sha256(key.encode() + b"\0" + obj).digest() != data[len(_MAGIC):len(_MAGIC) + 32]:
        raise ValueError("digest mismatch (damaged, or another key's object)")
    return obj


def _read_cached(path: Path, key: str) -> bytes | None:
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    why = "a symbolic link" if stat.S_ISLNK(st.st_mode) else _unsafe(st)
    data = b""
    if why is None:
        try:
            with open(path, "rb") as f:
                data = f.read()
            return _open_object(key, data)
        except (OSError, ValueError) as exc:
            why = str(exc)
    _warn(f"kernel cache file {path} rejected: {why}; removed and rebuilt")
    with contextlib.suppress(OSError):
        path.unlink()
    return None


def _write_cached(path: Path, key: str, obj: bytes) -> None:
    """Unique temporary name, fsync, rename, fsync the directory: readers (threads or
    processes) see the whole file or none."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(_seal_object(key, obj))
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
        dfd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        _warn(f"kernel cache file {path} not written: {exc}")


def target_machine(llvm_features: str, cpu_name: str | None = None, aot: bool = False
                   ) -> llvm.TargetMachine:
    """A target machine for ``cpu_name`` (default: the host) with exactly ``llvm_features``;
    ``aot`` for an object file to link (position independent, default code model).

    The loaded (JIT) objects use the small code model too, not LLVM's JIT default (large):
    constants are then RIP-relative memory operands instead of addresses held in registers,
    and the 16-register loops spill less (aesni_pclmul_avx's stitched loop: 60 -> 49 stack
    references per iteration; same-run A/B on Zen 4: VAES seal 2.5-4.5% faster at 1-64 KiB,
    3-10% at 16-64 B).  Safe because llvmlite's memory manager reserves one contiguous block
    for all sections of an object (llvmlite >= 0.42), so 32-bit PC-relative references
    within it reach; other objects' symbols go through the GOT or stubs (64-bit)."""
    init()
    target = llvm.Target.from_triple(llvm.get_process_triple())
    return target.create_target_machine(
        cpu=cpu_name or cpu.host_cpu_name(), features=llvm_features, opt=3,
        reloc="pic", codemodel="small", jit=not aot,
    )


def optimise(ir_text: str, tm: llvm.TargetMachine) -> llvm.ModuleRef:
    mod = llvm.parse_assembly(ir_text)
    mod.triple = tm.triple
    mod.data_layout = str(tm.target_data)
    mod.verify()
    pto = llvm.create_pipeline_tuning_options(speed_level=3)
    pb = llvm.create_pass_builder(tm, pto)
    pb.getModulePassManager().run(mod, pb)
    return mod


def cache_key(ir_text: str, llvm_features: str, cpu_name: str) -> str:
    h = hashlib.sha256()
    for part in (ir_text, llvm_features, cpu_name, llvmlite.__version__,
                 ".".join(map(str, llvm.llvm_version_info)), CODEGEN_VERSION, str(init())):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()[:32]


@dataclass
class Library:
    """Machine code for one module, loaded into this process."""

    name: str
    ir: str  # the generated (unoptimised) IR text
    llvm_features: str
    cpu_name: str
    obj: bytes
    compile_seconds: float  # 0.0 when it came from the disk cache
    from_cache: bool
    _engine: object = field(repr=False, default=None)
    _addresses: dict[str, int] = field(default_factory=dict, repr=False)

    def address(self, symbol: str) -> int:
        addr = self._addresses.get(symbol)
        if addr is None:
            addr = self._engine.get_function_address(symbol)  # type: ignore[attr-defined]
            if not addr:
                raise KeyError(f"{self.name}: no symbol {symbol}")
            self._addresses[symbol] = addr
        return addr

    def optimised_ir(self) -> str:
        return str(optimise(self.ir, target_machine(self.llvm_features, self.cpu_name)))

    def asm(self) -> str:
        return emit_assembly(self.ir, self.llvm_features, self.cpu_name)


def emit_object(ir_text: str, llvm_features: str, cpu_name: str | None = None,
                aot: bool = False) -> bytes:
    tm = target_machine(llvm_features, cpu_name, aot)
    return tm.emit_object(optimise(ir_text, tm))


def emit_assembly(ir_text: str, llvm_features: str, cpu_name: str | None = None) -> str:
    """The optimised assembly of ``ir_text`` for ``cpu_name`` (default: the host)."""
    tm = target_machine(llvm_features, cpu_name)
    return tm.emit_assembly(optimise(ir_text, tm))


def load_library(path: str) -> None:
    """Make a shared library's symbols resolvable by JIT-loaded code (e.g. libcrypto)."""
    init()
    llvm.load_library_permanently(path)


def compile_ir(name: str, ir_text: str, llvm_features: str, cpu_name: str | None = None,
               use_cache: bool = True) -> Library:
    """Compile (or fetch from the disk cache) and load ``ir_text``; returns its Library."""
    cpu_name = cpu_name or cpu.host_cpu_name()
    key = cache_key(ir_text, llvm_features, cpu_name)
    d = cache_dir() if use_cache else None
    path = d / f"{name}-{key}.vgko" if d is not None else None
    t0 = time.perf_counter()
    obj = _read_cached(path, key) if path is not None else None
    from_cache = obj is not None
    seconds = 0.0
    if obj is None:
        obj = emit_object(ir_text, llvm_features, cpu_name)
        seconds = time.perf_counter() - t0
        if path is not None:
            _write_cached(path, key, obj)
    with _lock:
        tm = target_machine(llvm_features, cpu_name)
        engine = llvm.create_mcjit_compiler(llvm.parse_assembly(""), tm)
        engine.add_object_file(llvm.ObjectFileRef.from_data(obj))
        engine.finalize_object()
    return Library(name, ir_text, llvm_features, cpu_name, obj, seconds, from_cache, engine)
