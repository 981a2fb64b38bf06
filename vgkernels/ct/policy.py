"""What is secret: the roles of the C ABI's arguments and the secrecy of the memory they point to.

Secret (labels): ``key`` (the key and the round keys), ``H`` (H and its powers), ``text``
(plaintext / ciphertext bytes, the keystream they meet), ``ghash`` (the GHASH state),
``keystream`` (E_K(J0), keystream buffered by the streaming API), ``tag`` (the tag under check
or the one computed).  Public: lengths, pointers, the nonce, the AAD, the number of pieces, the
context's header words (round count, key length, the fail-closed magic word and the binding's
in-flight count: every entry checks the magic word and branches on it).

``J0`` is the label of the counter: it is public for 96-bit nonces and H-derived otherwise
(J0 = GHASH_H(IV)).  A value loaded from an io block's counter slot carries ``J0`` in place of
``H`` and ``key``, so a finding that depends on nothing else is recognisable as the known,
bounded J0 leak (whether the 32-bit counter wraps within the message) rather than a new one.
"""

from __future__ import annotations

import re

from .. import abi

DECLARED = ("ctx", "state")  # regions whose fields' secrecy the ABI fixes (see taint.store)
SLOT = 16  # bytes per tracked memory slot
COUNTER_SLOT = 1  # io block {Y, ctr, len} and stream state: the counter at byte 16

# Region kinds -> labels of each slot at entry (None: every slot).
_CTX = {s: frozenset({"key"}) for s in range(abi.CTX_NROUNDS // SLOT)}
# round count, key length, magic word, in-flight count: one public slot (the fail-closed
# check branches on the magic word; the binding counts calls in flight)
_HEADER = (abi.CTX_NROUNDS, abi.CTX_KEY_LEN, abi.CTX_MAGIC, abi.CTX_INFLIGHT)
assert {off // SLOT for off in _HEADER} == {abi.CTX_NROUNDS // SLOT}, "header spans slots"
assert abi.CTX_POWERS // SLOT == abi.CTX_NROUNDS // SLOT + 1, "H powers follow the header"
_CTX[abi.CTX_NROUNDS // SLOT] = frozenset()
# stream state (kernels/stream.py): Y | ctr | len | E(J0) | keystream | open block | counters
_STATE = {0: frozenset({"ghash"}), 1: frozenset({"J0"}), 2: frozenset(),
          3: frozenset({"keystream"}), 4: frozenset({"keystream"}), 5: frozenset({"text"}),
          6: frozenset(), 7: frozenset()}

# C parameter name -> region kind of what it points to ("" for a scalar: public)
_ROLE = {
    "ctx": "ctx", "key": "key", "nonce": "public", "aad": "public", "inout": "text",
    "in": "text", "out": "text", "p0": "text", "p1": "text", "blocks": "text", "tag": "tag",
    # ctr32 / encrypt_blocks: the caller's counter block is public like a nonce (abi.py)
    "pieces": "pieces", "state": "state", "counter": "public", "y": "ghash",
}


def initial_labels(kind: str, slot: int | None) -> frozenset[str]:
    """Labels of a region's memory before the function writes it (slot None: any slot)."""
    if kind == "ctx":
        if slot is None:
            return frozenset({"key", "H"})
        return _CTX.get(slot, frozenset({"H"}))
    if kind == "state":
        if slot is None:
            return frozenset().union(*_STATE.values())
        return _STATE.get(slot, frozenset())
    return {"key": frozenset({"key"}), "text": frozenset({"text"}), "tag": frozenset({"tag"}),
            "ghash": frozenset({"ghash"}), "counter": frozenset({"J0"}),
            "piece-data": frozenset({"text"}), "unknown": frozenset({"unknown"})
            }.get(kind, frozenset())


def counter_view(kind: str, slot: int | None, labels: frozenset[str]) -> frozenset[str]:
    """Labels as loaded: the counter slot of an io block turns H into J0 (see module doc)."""
    if slot == COUNTER_SLOT and kind in ("alloca", "state") and labels & {"H", "key"}:
        # H = E_K(0): a hash under H depends on the key as well (and dynamic offsets into the
        # power table read as the whole context); neither is anything but J0 here
        return (labels - {"H", "key"}) | {"J0"}
    return labels


def _param_names(proto: str) -> list[str]:
    names = []
    for p in proto.strip()[1:-1].split(","):
        m = re.search(r"(\w+)\s*(\[\d*\])?\s*$", p.strip())
        names.append(m.group(1) if m else "")
    return names


def exported_roles(symbol: str, prefix: str) -> list[str] | None:
    """Region kind per original parameter of an exported kernel (None: not an ABI symbol)."""
    if not symbol.startswith(prefix + "_"):
        return None
    op = symbol[len(prefix) + 1:]
    if op == "seal_two_slice":
        proto = abi.TWO_SLICE_SIGNATURE[2]
    elif op in abi.SIGNATURES:
        proto = abi.SIGNATURES[op][2]
    else:
        return None
    return [_ROLE.get(n, "") for n in _param_names(proto)]


__all__ = ["COUNTER_SLOT", "DECLARED", "SLOT", "counter_view", "exported_roles", "initial_labels"]
