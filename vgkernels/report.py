"""``vgkernels report``: run the report notebooks into reports/<date>-<host>-<llvm cpu>/.

    vgkernels report [--profile tiny|quick|full] [--out DIR] [--backends ...] [--only NB ...]

Each notebook in notebooks/ runs through papermill with the profile's parameters (a kernel
of this very interpreter, so an unactivated venv works), is rendered to HTML, and writes its
figures, tables, sweep data and notes into the report directory; index.html shows the
headline numbers and figures and links everything.  A notebook that fails is reported in
the index and makes the exit status non-zero.  See vgkernels.reporting.
"""

from __future__ import annotations

from .reporting.batch import headline_table, kernel, main, parser, write_index

__all__ = ["headline_table", "kernel", "main", "parser", "write_index"]
