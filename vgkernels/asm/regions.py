"""The loops the generator emitted, found in a backend's assembly by what they do (what
``vgkernels predict`` runs through llvm-mca and the bench counts for its instruction-mix bound).

- ``stitch``: the steady-state stitched loop of the encrypting bulk function (AES-128,
  ``vg.bulk.enc.10``, or the function it hands a group and more to, ``vg.bulk.encreg.10``,
  where a backend has one: `Backend.enc_carry`): the first loop in layout order (the region
  comes before the leftover chunk in the generator), its hot path (the counter's rare carry
  branch not taken).
- ``lead``: the stitched loop of ``vg.bulk.enclead.10``, where a backend has one (its largest
  group is larger than the default: `Backend.lead_group`), which enc hands long messages to:
  the loop that runs at 16-64 KiB.
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

from ..backends import Backend
from ..variant import Variant
from . import cfg

AES_LAST = ("aesenclast", "vaesenclast")
AES_ROUND = ("aesenc", "vaesenc")
CLMUL = ("pclmulqdq", "vpclmulqdq")
_WIDTH = {"x": 1, "y": 2, "z": 4}


@dataclass(frozen=True)
class Region:
    name: str  # stitch | lead | leftover | key_setup | ctr | ghash
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


def _candidates(fn: cfg.Function, name: str, blocks: int) -> list[Region]:
    out = []
    for lp in cfg.loops(fn):
        path = cfg.hot_path(fn, lp)
        ins = [i for b in path for i in fn.blocks[b].instructions]
        out.append(Region(name, fn.name, tuple(path), tuple(ins), blocks))
    return out


def _pick(cands: list[Region], aes_blocks: int | None, what: str,
          exclude: Region | None = None) -> Region:
    """The loop doing ``aes_blocks`` blocks of AES per iteration with the most multiplies
    (the stitched loop reduces every iteration, the leftover loop does not); ties: the first
    in layout order.  Layout order alone is not enough: LLVM places the loops differently
    for different CPUs."""
    pool = [c for c in cands if exclude is None or c.blocks != exclude.blocks]
    if aes_blocks is not None:
        pool = [c for c in pool if c.aes_blocks() == aes_blocks]
    if not pool:
        raise ValueError(f"{what}: no loop with {aes_blocks} blocks of AES per iteration")
    best = max(c.count(CLMUL) for c in pool)
    return next(c for c in pool if c.count(CLMUL) == best)


def regions(text: str, prefix: str, backend: Backend, variant: Variant,
            nr: int = 10) -> dict[str, Region]:
    """The stitch, lead (where there is one), leftover, key_setup, ctr and ghash regions of a
    backend's assembly."""
    v = variant.resolved(backend)
    fns = cfg.functions(text)
    enc = next((f for f in (f"vg.bulk.encreg.{nr}", f"vg.bulk.enc.{nr}") if f in fns),
               f"vg.bulk.enc.{nr}")
    if enc not in fns:
        raise ValueError(f"no function {enc} in the assembly")
    w = backend.width
    u = min(v.group // w, 4)  # vectors per iteration of the leftover loop (bulk.rest)
    x86 = backend.prims != "portable"  # portable: no AES instruction to recognise a loop by
    out: dict[str, Region] = {}
    cands = _candidates(fns[enc], "stitch", v.group)
    if len(cands) < 2:
        raise ValueError(f"{enc}: expected the stitched and the leftover loops, found "
                         f"{len(cands)} loop(s)")
    if x86:
        st = _pick(cands, v.group, f"{enc} stitched loop")
        lo = _pick(_candidates(fns[enc], "leftover", u * w), u * w, f"{enc} leftover loop",
                   exclude=st)
    else:
        st = cands[0]
        lo = _candidates(fns[enc], "leftover", u * w)[1]
    out["stitch"], out["leftover"] = st, lo
    lead, g = f"vg.bulk.enclead.{nr}", backend.lead_group
    if lead in fns and (cs := _candidates(fns[lead], "lead", g)):
        out["lead"] = _pick(cs, g if x86 else None, f"{lead} loop")
    for name, fname in (("ctr", f"vg.bulk.ctr.{nr}"), ("ghash", "vg.bulk.hash")):
        if fname in fns and (cs := _candidates(fns[fname], name, v.group)):
            if not x86:
                out[name] = cs[0]
            elif name == "ctr":
                out[name] = _pick(cs, v.group, f"{fname} loop")
            else:
                out[name] = _pick(cs, None, f"{fname} loop")
    ki = f"{prefix}_key_init"
    if ki in fns and (ks := _candidates(fns[ki], "key_setup", 1)):
        k = ks[0]
        out["key_setup"] = Region("key_setup", ki, k.blocks, k.instructions,
                                  max(1, _stores(list(k.instructions))))
    return out


__all__ = ["Region", "regions"]
