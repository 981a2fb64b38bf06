"""vgkernels.elf, the one ELF64 reader: on an object LLVM emits here (any x86-64 host) and on a
shared object loaded in this process, against what the loader says."""

from __future__ import annotations

import ctypes

import llvmlite.binding as llvm
import pytest
from cryptography.hazmat.bindings import _rust

from vgkernels import elf

IR = """
target triple = "x86_64-unknown-linux-gnu"
@vg_elf_g = global i64 7
@vg_elf_ro = private unnamed_addr constant [24 x i8] c"read-only data, 24 bytes"
declare i64 @vg_elf_external(i64)
define i64 @vg_elf_f(i64 %x) {
  %y = call i64 @vg_elf_external(i64 %x)
  %g = load i64, ptr @vg_elf_g
  %z = add i64 %y, %g
  ret i64 %z
}
@vg_elf_g2 = global i64 9
define i64 @vg_elf_f2() {
  ret i64 1
}
"""


@pytest.fixture(scope="module")
def obj(tmp_path_factory) -> tuple[bytes, str]:
    """(bytes, path) of a small relocatable object: a function, a global, read-only data and
    an undefined external."""
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    target = llvm.Target.from_triple("x86_64-unknown-linux-gnu")
    tm = target.create_target_machine(reloc="pic", codemodel="small")  # .text, not .ltext
    data = tm.emit_object(llvm.parse_assembly(IR))
    path = tmp_path_factory.mktemp("elf") / "small.o"
    path.write_bytes(data)
    return data, str(path)


def syms_size(data: bytes, name: str) -> int:
    return next(s.size for s in elf.symbols(data) if s.name == name)


def test_symbols_of_an_object(obj):
    data, _ = obj
    syms = {s.name: s for s in elf.symbols(data)}
    assert syms["vg_elf_f"].type == elf.STT_FUNC and syms["vg_elf_f"].size > 0
    assert syms["vg_elf_g"].type == elf.STT_OBJECT and syms["vg_elf_g"].size == 8
    assert "vg_elf_external" not in syms  # undefined: section index 0
    names = [s.name for s in elf.sections(data)]
    assert names[syms["vg_elf_f"].section].startswith(".text")
    assert names[syms["vg_elf_g"].section] == ".data"


def test_section_sizes_are_the_allocated_ones(obj):
    data, _ = obj
    sizes = elf.section_sizes(data)
    assert sizes[".text"] >= syms_size(data, "vg_elf_f")
    assert sizes[".data"] == 16  # the two i64 globals
    assert sum(v for n, v in sizes.items() if n.startswith(".rodata")) >= 24
    assert ".symtab" not in sizes and ".strtab" not in sizes  # not loaded at run time


def test_symbol_values_from_a_file(obj):
    data, path = obj
    names = ["vg_elf_f", "vg_elf_f2", "vg_elf_g", "vg_elf_g2", "vg_elf_external", "absent"]
    values = elf.symbol_values(path, names)
    # in a relocatable object what sits at offset 0 of its section has value 0: not a usable
    # address, so it is left out like an undefined or missing name
    want = {s.name: s.value for s in elf.symbols(data) if s.name in names and s.value}
    assert values == want
    assert {"vg_elf_f2", "vg_elf_g2"} <= set(values)


def test_not_elf64_little_endian(tmp_path):
    with pytest.raises(elf.ElfError, match="not an ELF file"):
        list(elf.symbols(b"not an ELF file at all" * 4))
    with pytest.raises(elf.ElfError, match="not ELF64 little-endian"):
        elf.sections(b"\x7fELF\x01\x01\x01" + bytes(64))  # ELF32
    path = tmp_path / "x.so"
    path.write_bytes(b"MZ" + bytes(100))
    with pytest.raises(elf.ElfError):
        elf.symbol_values(path, ["f"])


def test_stripped_object(obj, tmp_path):
    data, _ = obj
    stripped = bytearray(data)
    h = elf._EHDR.unpack_from(data, 16)
    shoff, shentsize = h[5], h[10]
    for i, s in enumerate(elf.sections(data)):
        if s.type == elf.SHT_SYMTAB:  # turn it into a plain PROGBITS section
            off = shoff + i * shentsize
            raw = list(elf._SHDR.unpack_from(data, off))
            raw[1] = 1
            elf._SHDR.pack_into(stripped, off, *raw)
    assert elf.has_symtab(data) and not elf.has_symtab(bytes(stripped))
    assert list(elf.symbols(bytes(stripped))) == []
    path = tmp_path / "stripped.o"
    path.write_bytes(stripped)
    with pytest.raises(elf.ElfError, match="no .symtab"):
        elf.symbol_values(path, ["vg_elf_f"])


def test_runtime_address_matches_the_loader():
    """A symbol of a loaded shared object: load base + st_value is where dlsym finds it."""
    path = _rust.__file__
    with open(path, "rb") as f:
        if not elf.has_symtab(f.read()):
            pytest.skip(f"{path} is stripped (no .symtab) in this cryptography build")
    addr = elf.runtime_addresses(path, ["PyInit__rust"])
    want = ctypes.cast(ctypes.CDLL(path).PyInit__rust, ctypes.c_void_p).value
    assert addr == {"PyInit__rust": want}


def test_load_base_of_a_file_not_mapped(obj):
    _, path = obj
    with pytest.raises(elf.ElfError, match="not mapped"):
        elf.load_base(path)
