"""The regions worth predicting, found in a backend's assembly.

- ``stitch``: the steady-state stitched loop of the encrypting bulk function (AES-128,
  ``vg.bulk.enc.10``): the first loop in layout order (the region comes before the leftover
  chunk in the generator), its hot path (the counter's rare carry branch not taken).
- ``leftover``: the leftover chunk's loop in the same function (the next loop: u vectors of
  ``min(group / width, 4)`` per iteration).
- ``key_setup``: the loop of ``<prefix>_key_init`` that builds the table of H powers (the
  AES key expansion before it is straight-line code run once).
- ``ctr`` and ``ghash``: the first loops of ``vg.bulk.ctr.10`` (keystream alone, G blocks
  per iteration) and ``vg.bulk.hash`` (GHASH alone, G blocks): the two halves of the
  stitched loop on their own, which the driver times too (ctr32, ghash), so a misprediction
  can be traced to the AES or to the multiply side.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..backends import Backend, Variant
from . import asm as asm_mod

AES_LAST = ("aesenclast", "vaesenclast")
AES_ROUND = ("aesenc", "vaesenc")
CLMUL = ("pclmulqdq", "vpclmulqdq")
_WIDTH = {"x": 1, "y": 2, "z": 4}


@dataclass(frozen=True)
class Region:
    name: str  # stitch | leftover | key_setup
    function: str
    blocks: tuple[str, ...]  # hot path, in execution order
    instructions: tuple[str, ...]
    blocks_per_iteration: int  # 16-byte blocks (key_setup: H powers) one iteration handles

    @property
    def text(self) -> str:
        """The region as llvm-mca input."""
        return "\n".join(self.instructions) + "\n"

    def count(self, mnemonics: tuple[str, ...]) -> int:
        return sum(1 for i in self.instructions if i.split()[0] in mnemonics)

    def aes_blocks(self) -> int | None:
        """16-byte blocks whose last AES round is in the region (None: no AES instructions,
        e.g. the portable backend); a check on the blocks per iteration the variant says."""
        n = 0
        for ins in self.instructions:
            if ins.split()[0] in AES_LAST:
                m = re.search(r"%([xyz])mm\d+\s*$", ins)
                n += _WIDTH[m.group(1)] if m else 1
        return n or None


def _stores(instructions: list[str]) -> int:
    """Vector stores to memory: the H powers the key setup loop writes per iteration."""
    return sum(1 for i in instructions
               if re.match(r"v?mov\w*\s", i) and i.rstrip().endswith(")") and "%xmm" in i)


def regions(text: str, prefix: str, backend: Backend, variant: Variant,
            nr: int = 10) -> dict[str, Region]:
    """The stitch, leftover and key_setup regions of a backend's assembly ``text``."""
    v = variant.resolved(backend)
    fns = asm_mod.functions(text)
    enc = f"vg.bulk.enc.{nr}"
    if enc not in fns:
        raise ValueError(f"no function {enc} in the assembly")
    fn = fns[enc]
    lps = asm_mod.loops(fn)
    if len(lps) < 2:
        raise ValueError(f"{enc}: expected the stitched loop and the leftover loop, found "
                         f"{len(lps)} loop(s)")
    w = backend.width
    u = min(v.group // w, 4)  # vectors per iteration of the leftover loop (bulk.rest)
    out: dict[str, Region] = {}
    for name, lp, blocks in (("stitch", lps[0], v.group), ("leftover", lps[1], u * w)):
        path = asm_mod.hot_path(fn, lp)
        ins = [i for b in path for i in fn.blocks[b].instructions]
        out[name] = Region(name, enc, tuple(path), tuple(ins), blocks)
    for name, fname in (("ctr", f"vg.bulk.ctr.{nr}"), ("ghash", "vg.bulk.hash")):
        if fname in fns and (fl := asm_mod.loops(fns[fname])):
            path = asm_mod.hot_path(fns[fname], fl[0])
            ins = [i for b in path for i in fns[fname].blocks[b].instructions]
            out[name] = Region(name, fname, tuple(path), tuple(ins), v.group)
    ki = f"{prefix}_key_init"
    if ki in fns:
        kf = fns[ki]
        kl = asm_mod.loops(kf)
        if kl:
            path = asm_mod.hot_path(kf, kl[0])
            ins = [i for b in path for i in kf.blocks[b].instructions]
            out["key_setup"] = Region("key_setup", ki, tuple(path), tuple(ins),
                                      max(1, _stores(ins)))
    return out


__all__ = ["Region", "regions"]
