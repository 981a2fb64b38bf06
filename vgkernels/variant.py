"""One build of a backend's kernels: `Variant`, and its only encoders and decoders.

A variant is written in three forms, all made here so none can drift from the others:

* text (`Variant.tag` / `Variant.parse`): ``"tail=split,group=8,stitch_min=16,skew=6,karatsuba"``
  -- the CLI's ``--variant``, the ``variant`` column of the results, the notebooks' labels;
* data columns (`Variant.columns`, `columns_of_tag`): one column per field (``tail``, ``group``,
  ``stitch_min``, ``karatsuba``, ``skew``) in every results row, so no reader parses the text;
* symbol prefix (`symbol_prefix`): ``vg_<backend>`` for the default build, else
  ``vg_<backend>_<tail>_g<group>_s<stitch_min>_r<skew>[_k]``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .backends import Backend


class Tail(StrEnum):
    """How the blocks the stitched loop leaves over are processed.  A StrEnum: it compares
    equal to its text, so ``Variant(tail="split")`` and ``tail == "split"`` keep working."""

    FULL = "full"  # the stitched loop's leftover path takes every block
    SPLIT = "split"  # leftover blocks go through a separate ctr32 pass, then ghash


@dataclass(frozen=True)
class Variant:
    """Parameters of one build of a backend's kernels (what the notebooks sweep).  ``None``
    means "the backend's default" until `resolved` fills it in."""

    tail: Tail = Tail.FULL
    group: int | None = None  # blocks per stitched iteration; None: the backend's default
    stitch_min: int | None = None  # blocks below which the stitched loop is not entered
    karatsuba: bool | None = None  # 3 multiplies per block instead of 4; None: the default
    # of the backend on the CPU the code is scheduled for (`Backend.karatsuba_for`)
    skew: int | None = None  # AES rounds of the next group begun in this iteration (enc)

    def __post_init__(self) -> None:
        try:  # typed from here on: every later form (text, column, symbol) reads a Tail
            object.__setattr__(self, "tail", Tail(self.tail))
        except ValueError:
            raise ValueError(f"tail must be 'full' or 'split', not {self.tail!r}") from None

    def resolved(self, be: Backend, cpu: str | None = None) -> Variant:
        """Every field set: the backend's defaults where this variant left one open, for code
        scheduled for LLVM CPU ``cpu`` (None: the backend's own, the host unless it names
        one)."""
        g = self.group or be.group
        if g not in be.groups:
            raise ValueError(f"{be.name}: group {g} not in {be.groups}")
        if self.stitch_min is not None:
            sm = self.stitch_min
        elif self.group in (None, be.group) and be.stitch_min is not None:
            sm = be.stitch_min
        else:
            sm = 2 * g
        if not g <= sm <= 2 * g:
            raise ValueError(f"stitch_min must lie in [group, 2*group] = [{g}, {2 * g}], got {sm}")
        ka = be.karatsuba_for(cpu) if self.karatsuba is None else bool(self.karatsuba)
        sk = be.skew if self.skew is None else int(self.skew)
        if not 0 <= sk <= 9:
            raise ValueError(f"skew must lie in 0..9 rounds, got {sk}")
        return replace(self, group=g, stitch_min=sm, karatsuba=ka, skew=sk)

    # -- text ------------------------------------------------------------------------------
    def tag(self) -> str:
        """The text form of a resolved variant (karatsuba is named only when on)."""
        k = ",karatsuba" if self.karatsuba else ""
        return (f"tail={self.tail},group={self.group},stitch_min={self.stitch_min},"
                f"skew={self.skew}{k}")

    @classmethod
    def parse(cls, text: str | Variant | None) -> Variant:
        """A Variant from ``"tail=split,group=8,stitch_min=16,skew=6,karatsuba=1"`` (or a
        `tag`); ``split`` / ``full`` alone name the tail, ``karatsuba`` alone switches it on.
        Fields not named stay None (the backend's default)."""
        if isinstance(text, Variant):
            return text
        if not text:
            return cls()
        kw: dict[str, Any] = {}
        for part in text.split(","):
            part = part.strip()
            if part in tuple(Tail):
                kw["tail"] = Tail(part)
                continue
            key, eq, val = part.partition("=")
            if key not in FIELDS:
                raise ValueError(f"unknown variant parameter {key!r} in {text!r}; known: "
                                 f"{', '.join(FIELDS)}")
            if key == "karatsuba":
                kw[key] = (val.lower() in ("1", "true", "yes", "on")) if eq else True
            elif key == "tail":
                kw[key] = val
            else:
                kw[key] = int(val)
        return cls(**kw)

    # -- data columns ----------------------------------------------------------------------
    def columns(self) -> dict[str, Any]:
        """The fields as row columns (plain str / int / bool / None, for Parquet and CSV)."""
        return {f: _plain(getattr(self, f)) for f in FIELDS}

    def given(self) -> tuple[tuple[str, Any], ...]:
        """The explicitly set fields (unset ones take the backend's default): what a case
        spec carries to a worker process."""
        return tuple((f, _plain(getattr(self, f))) for f in FIELDS if getattr(self, f) is not None)


def _plain(x: Any) -> Any:
    return str(x) if isinstance(x, Tail) else x


FIELDS: tuple[str, ...] = tuple(f.name for f in dataclasses.fields(Variant))
NO_COLUMNS: dict[str, Any] = dict.fromkeys(FIELDS)  # the variant columns of a peer's row


def columns_of_tag(text: Any) -> dict[str, Any]:
    """The columns of a results row written before rows carried them (data schema < 4), from
    its ``variant`` text.  Those texts come from resolved variants, whose `tag` names
    karatsuba only when it is on: absent means off.  A text that is no variant (a peer's
    ``openssl``, a missing value) gives no columns."""
    try:
        v = Variant.parse(text) if isinstance(text, str) else None
    except ValueError:
        v = None
    if v is None or v.group is None:
        return dict(NO_COLUMNS)
    return replace(v, karatsuba=bool(v.karatsuba)).columns()


# -- symbol names ------------------------------------------------------------------------------

def symbol_prefix(backend: Backend, variant: Variant, cpu: str | None = None) -> str:
    """``vg_<backend>`` for the backend's default variant on LLVM CPU ``cpu`` (see
    `Variant.resolved`); otherwise every field, one letter
    each: ``vg_<backend>_<tail>_g<group>_s<stitch_min>_r<skew>`` plus ``_k`` with Karatsuba
    (r: AES rounds of the next group begun early; not w, which means vector width elsewhere)."""
    base = f"vg_{backend.name}"
    v = variant.resolved(backend, cpu)
    if v == Variant().resolved(backend, cpu):
        return base
    k = "_k" if v.karatsuba else ""
    return f"{base}_{v.tail}_g{v.group}_s{v.stitch_min}_r{v.skew}{k}"
