"""The report notebooks: where they are, and their .ipynb kept in step with the jupytext
percent scripts they are written as.

``notebooks/NN_name.py`` (jupytext percent format) is the source, reviewed as code;
``notebooks/NN_name.ipynb`` is generated from it (no outputs, kernelspec ``python3``) and is
what papermill executes.  ``vgkernels report --sync-notebooks`` regenerates the .ipynb files;
a test fails when one is out of step.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

from ..predict.mca import missing_reason
from .session import project_root

NOTEBOOKS = ("01_inventory", "02_block_counts", "03_tail_sizes", "04_copy_below",
             "05_two_slice", "06_peers_roofline", "07_predict", "08_constant_time",
             "09_across_hosts", "10_targets")
NOTEBOOKS_ENV = "VG_NOTEBOOKS"
KERNELSPEC = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}


def packaged_dir() -> Path:
    """Where an installed (non-editable) vgkernels keeps its copy of the notebooks; setup.py
    puts them there when it builds the package."""
    return Path(__file__).resolve().parents[1] / "notebooks"


def notebooks_dir(override: str | Path | None = None) -> Path:
    """The notebooks directory: ``override``, ``$VG_NOTEBOOKS``, the checkout the package
    was installed from (editable install), the copy inside an installed package, or a
    checkout at or above the current directory."""
    cands: list[Path] = []
    if override:
        cands.append(Path(override))
    if os.environ.get(NOTEBOOKS_ENV):
        cands.append(Path(os.environ[NOTEBOOKS_ENV]))
    root = project_root(Path(__file__).resolve().parents[2])
    if root is not None:
        cands.append(root / "notebooks")
    cands.append(packaged_dir())
    root = project_root()
    if root is not None:
        cands.append(root / "notebooks")
    for c in cands:
        if c.is_dir() and (any(c.glob("[0-9][0-9]_*.ipynb")) or any(c.glob("[0-9][0-9]_*.py"))):
            return c.resolve()
    raise FileNotFoundError(
        "cannot find the report notebooks (NN_*.ipynb): install vgkernels from a wheel or "
        f"a checkout (pip install . / pip install -e .), or set {NOTEBOOKS_ENV}")


def copy_out(dest: str | Path, overwrite: bool = False, source: str | Path | None = None
             ) -> list[Path]:
    """Copy the report notebooks (.ipynb, no outputs) into ``dest`` to open in JupyterLab;
    FileExistsError rather than overwrite one, unless ``overwrite``.  Returns the copies."""
    src = notebooks_dir(source)
    dest = Path(dest)
    paths = discover(src)
    clash = [dest / p.name for p in paths if (dest / p.name).exists()]
    if clash and not overwrite:
        raise FileExistsError(f"{', '.join(str(c) for c in clash)} already exist(s) "
                              "(--force overwrites)")
    dest.mkdir(parents=True, exist_ok=True)
    return [Path(shutil.copyfile(p, dest / p.name)) for p in paths]


def skip_reason(name: str) -> str | None:
    """Why the batch must not run a notebook here (a tool it needs is missing), else None."""
    if name.endswith("_predict"):
        return missing_reason()
    return None


def discover(directory: Path) -> list[Path]:
    """The notebooks of a directory in order (NN_name.ipynb)."""
    return sorted(directory.glob("[0-9][0-9]_*.ipynb"))


def select(paths: list[Path], only: list[str] | None) -> list[Path]:
    """Notebooks matching any of ``only`` (a number "02", a full name, or part of a name)."""
    if not only:
        return list(paths)
    out = []
    for p in paths:
        for o in only:
            o = o.removesuffix(".ipynb").removesuffix(".py")
            if p.stem == o or p.stem.split("_", 1)[0] == o.zfill(2) or o in p.stem:
                out.append(p)
                break
    return out


def build(py: Path):
    """The notebook (nbformat v4, no outputs) a percent script describes."""
    # lazy: jupytext and nbformat add 0.26 s to `vgkernels notebooks`, `report --list`, `-h`
    import jupytext
    import nbformat

    nb = jupytext.read(py, fmt="py:percent")
    nb.metadata = nbformat.from_dict({
        "kernelspec": dict(KERNELSPEC),
        "language_info": {"name": "python"},
        "jupytext": {"formats": "ipynb,py:percent"},
    })
    for i, cell in enumerate(nb.cells):
        tags = list(cell.get("metadata", {}).get("tags", []))
        cell.metadata = nbformat.from_dict({"tags": tags} if tags else {})
        digest = hashlib.sha1(f"{py.stem}:{i}:{cell.cell_type}".encode()).hexdigest()[:12]
        cell["id"] = f"{py.stem[:2]}-{i:02d}-{digest[:6]}"
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
    nb.nbformat, nb.nbformat_minor = 4, 5
    nbformat.validate(nb)
    return nb


def render(py: Path) -> str:
    """The .ipynb text generated from a percent script."""
    import nbformat  # lazy: see build

    return nbformat.writes(build(py), version=4) + "\n"


def sync(directory: Path, check: bool = False) -> list[Path]:
    """Regenerate every NN_name.ipynb from its NN_name.py (``check``: only report which are
    out of step).  Returns the .ipynb paths that were (or would be) rewritten."""
    changed = []
    for py in sorted(directory.glob("[0-9][0-9]_*.py")):
        ipynb = py.with_suffix(".ipynb")
        text = render(py)
        if not ipynb.exists() or ipynb.read_text() != text:
            changed.append(ipynb)
            if not check:
                ipynb.write_text(text)
    return changed


def strip_outputs(path: Path) -> bool:
    """Remove outputs and execution counts from an .ipynb in place; True if it changed."""
    import nbformat  # lazy: see build

    nb = nbformat.read(path, as_version=4)
    dirty = False
    for cell in nb.cells:
        if cell.cell_type == "code" and (cell.outputs or cell.execution_count is not None):
            cell.outputs, cell.execution_count = [], None
            dirty = True
    if dirty:
        nbformat.write(nb, path)
    return dirty
