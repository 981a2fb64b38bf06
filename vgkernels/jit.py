"""LLVM IR -> optimised machine code with llvmlite: target machines, a disk cache of objects,
loading into the process, and the IR / assembly text of what was built.

LLVM's machine scheduler undoes the interleaving the generators write (it hoists all the
multiplies, then runs each block's AES rounds back to back), so it is switched off before the
first target machine is made.  The option is process-wide; ``VG_MISCHED=1`` keeps it on for
experiments, and it is part of the cache key.
"""

from __future__ import annotations

import functools
import hashlib
import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import llvmlite
import llvmlite.binding as llvm

from . import cpu

CODEGEN_VERSION = "1"  # bump when the pass pipeline or options below change
_lock = threading.Lock()


@functools.cache
def _init() -> bool:
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    misched = os.environ.get("VG_MISCHED", "0") == "1"
    if not misched:
        llvm.set_option("", "-enable-misched=false")
    return misched


def cache_dir() -> Path:
    d = os.environ.get("VG_CACHE_DIR")
    base = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
    p = Path(d) if d else base / "vgkernels"
    p.mkdir(parents=True, exist_ok=True)
    return p


def target_machine(llvm_features: str, cpu_name: str | None = None, aot: bool = False
                   ) -> llvm.TargetMachine:
    """A target machine for ``cpu_name`` (default: the host) with exactly ``llvm_features``;
    ``aot`` for an object file to link (position independent, default code model)."""
    _init()
    target = llvm.Target.from_triple(llvm.get_process_triple())
    return target.create_target_machine(
        cpu=cpu_name or cpu.host_cpu_name(), features=llvm_features, opt=3,
        reloc="pic", codemodel="default" if aot else "jitdefault", jit=not aot,
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
                 ".".join(map(str, llvm.llvm_version_info)), CODEGEN_VERSION, str(_init())):
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
        tm = target_machine(self.llvm_features, self.cpu_name)
        return tm.emit_assembly(optimise(self.ir, tm))


def emit_object(ir_text: str, llvm_features: str, cpu_name: str | None = None,
                aot: bool = False) -> bytes:
    tm = target_machine(llvm_features, cpu_name, aot)
    return tm.emit_object(optimise(ir_text, tm))


def load_library(path: str) -> None:
    """Make a shared library's symbols resolvable by JIT-loaded code (e.g. libcrypto)."""
    _init()
    llvm.load_library_permanently(path)


def compile_ir(name: str, ir_text: str, llvm_features: str, cpu_name: str | None = None,
               use_cache: bool = True) -> Library:
    """Compile (or fetch from the disk cache) and load ``ir_text``; returns its Library."""
    cpu_name = cpu_name or cpu.host_cpu_name()
    key = cache_key(ir_text, llvm_features, cpu_name)
    path = cache_dir() / f"{name}-{key}.o"
    t0 = time.perf_counter()
    from_cache = use_cache and path.exists()
    if from_cache:
        obj = path.read_bytes()
        seconds = 0.0
    else:
        obj = emit_object(ir_text, llvm_features, cpu_name)
        seconds = time.perf_counter() - t0
        if use_cache:
            tmp = path.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_bytes(obj)
            os.replace(tmp, path)  # atomic: concurrent processes never see half a file
    with _lock:
        tm = target_machine(llvm_features, cpu_name)
        engine = llvm.create_mcjit_compiler(llvm.parse_assembly(""), tm)
        engine.add_object_file(llvm.ObjectFileRef.from_data(obj))
        engine.finalize_object()
    return Library(name, ir_text, llvm_features, cpu_name, obj, seconds, from_cache, engine)
