"""README's Layout table is the package's import order: a module imports from its own row and
the rows above it, never below (lazy imports inside functions included).  The table is read
from README.md, so the documentation and the code cannot drift apart."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PKG = ROOT / "vgkernels"


def floors() -> dict[str, int]:
    """Top-level module or package name -> its row in README's Layout table (0 = floor)."""
    text = (ROOT / "README.md").read_text()
    table = text.split("## Layout", 1)[1].split("\n\n| path | what |", 1)[1].split("\n\n", 1)[0]
    rows = [line for line in table.splitlines() if line.startswith("| `")]
    out: dict[str, int] = {}
    for i, row in enumerate(rows):
        first = row.split("|")[1]
        for name in re.findall(r"`([^`]+)`", first):
            name = name.removeprefix("vgkernels/").removesuffix("/").removesuffix(".py")
            if name != "notebooks":
                out[name] = i
    return out


def _top(module: str) -> str | None:
    """``vgkernels.bench.cli`` -> ``bench``; None outside the package."""
    parts = module.split(".")
    return parts[1] if parts[0] == "vgkernels" and len(parts) > 1 else None


def _imports(path: Path, source: str | None = None) -> list[tuple[int, str]]:
    """(line, absolute module) of every import in the file, relative ones resolved."""
    here = list(path.relative_to(ROOT).parts[:-1])  # the package the file is in
    out = []
    tree = ast.parse(path.read_text() if source is None else source)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = here[: len(here) - node.level + 1] if node.level else []
            mod = ".".join(base + ([node.module] if node.module else []))
            if node.module is None or mod == "vgkernels":  # `from .. import jit`
                out += [(node.lineno, f"{mod}.{a.name}") for a in node.names]
            else:
                out.append((node.lineno, mod))
    return out


def test_every_package_module_has_a_row():
    rows = floors()
    names = {p.stem if p.is_file() else p.name for p in PKG.iterdir()
             if (p.suffix == ".py" or (p.is_dir() and (p / "__init__.py").exists()))}
    missing = names - set(rows) - {"__init__", "__main__"}
    assert not missing, f"modules without a row in README's Layout table: {sorted(missing)}"


def test_no_import_points_below_its_row():
    rows = floors()
    bad = []
    for path in sorted(PKG.rglob("*.py")):
        me = _top(".".join(path.relative_to(ROOT).with_suffix("").parts))
        if me is None or me in ("__init__", "__main__"):
            continue
        for line, mod in _imports(path):
            them = _top(mod)
            if them in rows and rows[them] > rows[me]:
                bad.append(f"{path.relative_to(ROOT)}:{line} ({me}, row {rows[me]}) "
                           f"imports {mod} (row {rows[them]})")
    assert not bad, "imports pointing down README's Layout table:\n" + "\n".join(bad)


def test_the_check_sees_a_wrong_import():
    """The resolver itself: a relative import two levels up is resolved, so the check above
    cannot pass by not seeing imports."""
    probe = PKG / "bench" / "probe.py"  # not written: the source is given
    got = [m for _, m in _imports(probe, "from ..report import session\nfrom . import driver\n")]
    assert got == ["vgkernels.report", "vgkernels.bench.driver"]
    assert floors()["report"] > floors()["bench"]
