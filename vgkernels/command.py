"""The error boundary every command runs inside (``vgkernels`` and its sub-commands).

A user error (an unknown name, a bad VG_CPU_FEATURES, a backend this CPU lacks) is one line
on stderr and exit status 2, never a traceback; a bug keeps its traceback.  It sits low
(beside ``cpu``) so ``bench`` and ``cli`` both stand on it.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

from .cpu import UnknownFeature

if TYPE_CHECKING:
    from .backends import Backend


class UsageError(Exception):
    """A mistake in what the user asked for: reported as one line, exit status 2."""


# The exception types that mean "the user asked for something wrong", not a bug.
USER_ERRORS: tuple[type[BaseException], ...] = (UsageError, UnknownFeature)


def backend_row(name: str, usable: bool = False) -> Backend:
    """A backend row by name; with ``usable``, a UsageError when this CPU (or the
    VG_CPU_FEATURES mask) lacks it."""
    from . import backends  # here: backends imports cpu, which this module sits beside

    if name not in backends.BY_NAME:
        raise UsageError(f"unknown backend {name!r}; known: {', '.join(backends.BY_NAME)}")
    why = backends.availability().get(name) if usable else None
    if why is not None:
        raise UsageError(f"backend {name} is not usable here: {why}")
    return backends.get(name)


def run(entry: Callable[[list[str]], int], argv: list[str], prog: str = "vgkernels") -> int:
    """Run ``entry(argv)``: user errors and Ctrl-C become one line on stderr and a non-zero
    status; anything else is a bug and keeps its traceback."""
    try:
        return entry(argv)
    except USER_ERRORS as e:
        print(f"{prog}: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `vgkernels asm ... | head`: the reader left, nothing to say
        sys.stderr.close()
        return 0
