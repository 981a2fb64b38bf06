"""What each bulk mode does, as small strategy objects (no mode strings compared).

======  =========  ===============  ==================================================
mode    keystream  GHASH reads      used by
======  =========  ===============  ==================================================
enc     yes        the output       seal, gather, streaming encrypt, encrypt_blocks
dec     yes        the input        open, streaming decrypt
hash    no         the input        AAD, J0 of a long nonce, the ghash kernel
ctr     yes        nothing          the ctr32 kernel (and the roofline)
======  =========  ===============  ==================================================

``reserve``: groups the stitched loop leaves to the leftover chunk.  dec and hash keep their
last group back so the leftover multiplies it by the descending powers H^r..; enc keeps none
but ends with one group *pending* (stored, not hashed yet: the loop hashes the group before
the one it encrypts).
"""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING

from llvmlite import ir

from ..ir.core import i1, i64, ptr
from . import leftover, stitched

if TYPE_CHECKING:
    from .bulk import BulkFn


class Side(enum.Enum):
    """Which side of the keystream XOR GHASH reads."""
    IN = "in"
    OUT = "out"


class Mode:
    name: str
    keystream: bool
    hashed: Side | None
    reserve: int

    @property
    def stitched(self) -> bool:
        """AES and GHASH both: the modes with a pending group and a split tail strategy."""
        return self.keystream and self.hashed is not None

    @property
    def hashes_input(self) -> bool:
        return self.hashed is Side.IN

    @property
    def hashes_output(self) -> bool:
        return self.hashed is Side.OUT

    def symbol(self, nr: int, extra: bool) -> str:
        """vg.bulk.<mode>[1].<nr>; hash has no round keys, hence no nr."""
        one = "1" if extra else ""
        return f"vg.bulk.{self.name}{one}" + (f".{nr}" if self.keystream else "")

    def arg_types(self, extra: bool) -> list[ir.Type]:
        """(ctx, io, in, out, nbytes, has_len[, pub_ctr][, extra byte])."""
        return ([ptr, ptr, ptr, ptr, i64, i1] + ([i64] if self.keystream else [])
                + ([ir.IntType(8)] if extra else []))

    def min_blocks(self, g: int, stitch_min: int) -> int:
        """Whole blocks below which the stitched loop is not entered."""
        need = (1 + self.reserve) * g
        return max(stitch_min, need) if self.stitched else need

    def region(self, fn: BulkFn, end: ir.Value, s0: ir.Value, ctr: ir.Value) -> list[ir.Value]:
        """The stitched loop over blocks [0, end): [first block not taken, GHASH state, ctr]."""
        raise NotImplementedError

    def hashed_value(self, data: ir.Value, out: ir.Value) -> ir.Value:
        return out if self.hashed is Side.OUT else data

    def pending_first(self, left: leftover.Leftover, pending: ir.Value | None) -> None:
        """Settle the group the stitched loop left pending (nothing by default)."""


class Enc(Mode):
    name, keystream, hashed, reserve = "enc", True, Side.OUT, 0

    def region(self, fn, end, s0, ctr):
        return stitched.enc_region(fn, end, s0, ctr)

    def pending_first(self, left, pending):
        if pending is not None:
            left.hash_stored_group(pending)


class Dec(Mode):
    name, keystream, hashed, reserve = "dec", True, Side.IN, 1

    def region(self, fn, end, s0, ctr):
        return stitched.counting_region(fn, "stitch", end, s0, ctr, hash_input=True)

    def pending_first(self, left, pending):
        if pending is not None:
            left.last_stitched_group(pending)


class Hash(Mode):
    name, keystream, hashed, reserve = "hash", False, Side.IN, 1

    def region(self, fn, end, s0, ctr):
        return stitched.hash_region(fn, end, s0, ctr)


class Ctr(Mode):
    name, keystream, hashed, reserve = "ctr", True, None, 0

    def region(self, fn, end, s0, ctr):
        return stitched.counting_region(fn, "ctr", end, s0, ctr, hash_input=False)


ENC, DEC, HASH, CTR = Enc(), Dec(), Hash(), Ctr()
MODES: dict[str, Mode] = {m.name: m for m in (ENC, DEC, HASH, CTR)}
