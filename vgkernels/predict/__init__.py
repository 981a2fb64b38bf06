"""Predictions for CPUs not at hand: the generated loops through llvm-mca.

The loops come from ``vgkernels.asm`` (assembly -> blocks -> loops -> the regions: stitched
loop, leftover loop, key setup), which the bench's instruction-mix bound reads too.
``mca`` (find and run llvm-mca, parse its JSON), ``model`` (cycles per block /
byte, the bound), ``targets`` (CPU names and the backends each supports), ``predictor``
(compile for a CPU and predict), ``validate`` (against the driver on the host), ``recommend``
(the per-CPU recommendation table as data), ``cli`` (``vgkernels predict``).
"""

from .mca import McaMissing, missing_reason

__all__ = ["McaMissing", "missing_reason"]
