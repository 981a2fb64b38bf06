"""Constant-time verification of the emitted kernels.

- ``taint``: taint analysis over the optimised IR (which values depend on key, H, text, GHASH
  state, tag; where they decide a branch, an address, a division or a call);
- ``machine``: the object code's conditional jumps, cmovs and indexed accesses, traced back;
- ``check``: both over a backend's kernels, machine findings tied to IR findings;
- ``controls``: leaky variants that the checks (and the timing test) must catch;
- ``timing``: dudect-style Welch t-test through the native driver (``vgkernels ct-timing``).
"""

from __future__ import annotations

from .check import Report, check_backend, check_ir

__all__ = ["Report", "check_backend", "check_ir"]
