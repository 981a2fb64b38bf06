"""ELF64 little-endian (x86-64) files read with ``struct``: sections, the static symbol table
(``.symtab``) and where a shared object is loaded in this process.

Two users, one reader: the report's inventory sizes the functions and sections of a compiled
kernel object, and the bench finds the OpenSSL functions that the ``cryptography`` and
``awscrt`` wheels link in statically but do not export (the files keep their ``.symtab``:
``nm`` shows ``t EVP_EncryptUpdate``).  The runtime address of such a symbol is
``load_base + st_value``; for a shared object (ET_DYN) the load base is the start of the
mapping of file offset 0 minus the page-aligned ``p_vaddr`` of the first PT_LOAD segment (0 for
every ordinary ``.so``).

Standard library only, so any floor of the package may use it.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterable, Iterator
from typing import NamedTuple

SHT_SYMTAB = 2
SHF_ALLOC = 0x2
PT_LOAD = 1
STT_OBJECT = 1
STT_FUNC = 2

# e_type, e_machine, e_version, e_entry, e_phoff, e_shoff, e_flags, e_ehsize, e_phentsize,
# e_phnum, e_shentsize, e_shnum, e_shstrndx (after the 16-byte e_ident)
_EHDR = struct.Struct("<HHIQQQIHHHHHH")
# sh_name, sh_type, sh_flags, sh_addr, sh_offset, sh_size, sh_link, sh_info, sh_addralign,
# sh_entsize
_SHDR = struct.Struct("<IIQQQQIIQQ")
# p_type, p_flags, p_offset, p_vaddr, p_paddr, p_filesz, p_memsz, p_align
_PHDR = struct.Struct("<IIQQQQQQ")
# st_name, st_info, st_other, st_shndx, st_value, st_size
_SYM = struct.Struct("<IBBHQQ")


class ElfError(ValueError):
    """Not an ELF64 little-endian file, no ``.symtab``, or the file is not mapped here."""


class Section(NamedTuple):
    """One section header, with its name from the section-name string table."""
    name: str
    type: int
    flags: int
    offset: int
    size: int
    link: int
    entsize: int


class Symbol(NamedTuple):
    """One defined symbol of a ``.symtab``: ``type`` is STT_FUNC, STT_OBJECT, ...; ``section``
    the index of the section it is defined in."""
    name: str
    value: int
    size: int
    type: int
    section: int


def _header(data: bytes) -> tuple:
    if data[:4] != b"\x7fELF":
        raise ElfError("not an ELF file")
    if data[4] != 2 or data[5] != 1:
        raise ElfError("not ELF64 little-endian")
    return _EHDR.unpack_from(data, 16)


def _string(data: bytes, offset: int) -> str:
    return data[offset:data.index(b"\0", offset)].decode("latin-1")


def sections(data: bytes) -> list[Section]:
    """Every section header of an ELF64 image, in file order."""
    h = _header(data)
    shoff, shentsize, shnum, shstrndx = h[5], h[10], h[11], h[12]
    raw = [_SHDR.unpack_from(data, shoff + i * shentsize) for i in range(shnum)]
    names = raw[shstrndx][4] if shstrndx < len(raw) else None
    return [Section(_string(data, names + r[0]) if names is not None else "", r[1], r[2], r[4],
                    r[5], r[6], r[9]) for r in raw]


def has_symtab(data: bytes) -> bool:
    """True when the image keeps a static symbol table (it was not stripped)."""
    return any(s.type == SHT_SYMTAB for s in sections(data))


def symbols(data: bytes) -> Iterator[Symbol]:
    """Every named, defined symbol (section index not 0) of the image's ``.symtab``, in table
    order; nothing when there is none."""
    secs = sections(data)
    for tab in secs:
        if tab.type != SHT_SYMTAB:
            continue
        strings = secs[tab.link].offset
        ent = tab.entsize or _SYM.size
        for o in range(tab.offset, tab.offset + tab.size, ent):
            st_name, st_info, _other, shndx, value, size = _SYM.unpack_from(data, o)
            if st_name and shndx != 0:
                yield Symbol(_string(data, strings + st_name), value, size, st_info & 0xF, shndx)


def section_sizes(data: bytes) -> dict[str, int]:
    """Section name -> bytes, for the sections loaded at run time (SHF_ALLOC); sections of
    the same name are added up."""
    out: dict[str, int] = {}
    for s in sections(data):
        if s.flags & SHF_ALLOC:
            out[s.name] = out.get(s.name, 0) + s.size
    return out


def first_load_vaddr(data: bytes) -> int:
    """Page-aligned p_vaddr of the first PT_LOAD segment (the one file offset 0 maps)."""
    h = _header(data)
    phoff, phentsize, phnum = h[4], h[8], h[9]
    for i in range(phnum):
        ph = _PHDR.unpack_from(data, phoff + i * phentsize)
        if ph[0] == PT_LOAD:
            return (ph[3] - ph[2]) & ~0xFFF
    raise ElfError("no PT_LOAD segment")


def symbol_values(path: str | os.PathLike, names: Iterable[str]) -> dict[str, int]:
    """{name: st_value} from a file's ``.symtab`` for those of ``names`` defined there as
    functions or objects with a non-zero value (the first one wins; missing names are simply
    absent).  ElfError when the file has no ``.symtab`` (stripped)."""
    want = set(names)
    with open(path, "rb") as f:
        data = f.read()
    if not has_symtab(data):
        raise ElfError(f"{path}: no .symtab (stripped)")
    found: dict[str, int] = {}
    for s in symbols(data):
        if (s.name in want and s.name not in found and s.value
                and s.type in (STT_FUNC, STT_OBJECT)):
            found[s.name] = s.value
    return found


def load_base(path: str | os.PathLike, maps: str = "/proc/self/maps") -> int:
    """Where ``path`` is loaded in this process: start of its mapping of file offset 0, minus
    the first PT_LOAD's page-aligned p_vaddr."""
    real = os.path.realpath(path)
    st = os.stat(real)
    starts = []
    with open(maps) as f:
        for line in f:
            parts = line.split(None, 5)
            if len(parts) < 6:
                continue
            rng, _perms, offset, _dev, inode, p = parts
            p = p.strip()
            if int(offset, 16) != 0:
                continue
            if p == real or (int(inode) == st.st_ino and os.path.basename(p) ==
                             os.path.basename(real)):
                starts.append(int(rng.split("-")[0], 16))
    if not starts:
        raise ElfError(f"{real} is not mapped in this process")
    with open(real, "rb") as f:
        head = f.read(1 << 16)  # the ELF and program headers sit at the start
    try:
        return min(starts) - first_load_vaddr(head)
    except ElfError as e:
        raise ElfError(f"{real}: {e}") from None


def runtime_addresses(path: str | os.PathLike, names: Iterable[str]) -> dict[str, int]:
    """{name: address in this process} for the names found in ``path``'s ``.symtab``."""
    base = load_base(path)
    return {n: base + v for n, v in symbol_values(path, names).items()}
