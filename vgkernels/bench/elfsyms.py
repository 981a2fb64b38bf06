"""Addresses of a loaded shared object's *local* functions, from its static ``.symtab``.

The ``cryptography`` wheel links its own OpenSSL statically into
``cryptography/hazmat/bindings/_rust.abi3.so`` and exports none of it, but the file keeps its
symbol table (``nm`` shows ``t EVP_EncryptUpdate``).  ``symbols(path, names)`` reads the ELF64
section headers, ``.symtab`` and its linked string table with ``struct`` (little-endian x86-64
only), and ``load_base(path)`` finds where the dynamic loader put the file in this process
(``/proc/self/maps``): the runtime address of a symbol is ``load_base + st_value``.

For a shared object (ET_DYN) the load base is the start of the mapping of file offset 0 minus
the page-aligned ``p_vaddr`` of the first PT_LOAD segment (0 for every ordinary ``.so``).
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterable

SHT_SYMTAB = 2
PT_LOAD = 1
ET_DYN = 3
STT_FUNC = 2
STT_OBJECT = 1


class ElfError(RuntimeError):
    """Not an ELF64 little-endian file, no ``.symtab``, or the file is not mapped here."""


def _header(data: bytes) -> tuple:
    if data[:4] != b"\x7fELF":
        raise ElfError("not an ELF file")
    if data[4] != 2 or data[5] != 1:
        raise ElfError("not ELF64 little-endian")
    # e_type, e_machine, e_version, e_entry, e_phoff, e_shoff, e_flags, e_ehsize,
    # e_phentsize, e_phnum, e_shentsize, e_shnum, e_shstrndx
    return struct.unpack_from("<HHIQQQIHHHHHH", data, 16)


def _sections(data: bytes) -> list[tuple]:
    h = _header(data)
    shoff, shentsize, shnum = h[5], h[10], h[11]
    # sh_name, sh_type, sh_flags, sh_addr, sh_offset, sh_size, sh_link, sh_info,
    # sh_addralign, sh_entsize
    return [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]


def first_load_vaddr(path: str | os.PathLike) -> int:
    """Page-aligned p_vaddr of the first PT_LOAD segment (the one file offset 0 maps)."""
    with open(path, "rb") as f:
        data = f.read(1 << 16)
    h = _header(data)
    phoff, phentsize, phnum = h[4], h[8], h[9]
    for i in range(phnum):
        # p_type, p_flags, p_offset, p_vaddr, p_paddr, p_filesz, p_memsz, p_align
        ph = struct.unpack_from("<IIQQQQQQ", data, phoff + i * phentsize)
        if ph[0] == PT_LOAD:
            return (ph[3] - ph[2]) & ~0xFFF
    raise ElfError(f"{path}: no PT_LOAD segment")


def symbols(path: str | os.PathLike, names: Iterable[str]) -> dict[str, int]:
    """{name: st_value} from ``.symtab`` for those of ``names`` defined there (functions and
    objects with a non-zero value; missing names are simply absent)."""
    want = set(names)
    with open(path, "rb") as f:
        data = f.read()
    secs = _sections(data)
    tab = next((s for s in secs if s[1] == SHT_SYMTAB), None)
    if tab is None:
        raise ElfError(f"{path}: no .symtab (stripped)")
    strtab = secs[tab[6]]
    s_off, s_size = strtab[4], strtab[5]
    strings = data[s_off:s_off + s_size]
    off, size, ent = tab[4], tab[5], tab[9] or 24
    found: dict[str, int] = {}
    for o in range(off, off + size, ent):
        # st_name, st_info, st_other, st_shndx, st_value, st_size
        st_name, st_info, _other, shndx, value, _sz = struct.unpack_from("<IBBHQQ", data, o)
        if not st_name or not value or shndx == 0 or (st_info & 0xF) not in (STT_FUNC,
                                                                            STT_OBJECT):
            continue
        end = strings.index(b"\0", st_name)
        name = strings[st_name:end].decode("latin-1")
        if name in want and name not in found:
            found[name] = value
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
    return min(starts) - first_load_vaddr(real)


def runtime_addresses(path: str | os.PathLike, names: Iterable[str]) -> dict[str, int]:
    """{name: address in this process} for the names found in ``path``'s ``.symtab``."""
    base = load_base(path)
    return {n: base + v for n, v in symbols(path, names).items()}
