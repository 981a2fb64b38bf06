"""Build step: the report notebooks (top-level notebooks/, their sources) go into the package
as vgkernels/notebooks/, so an installed wheel can run ``vgkernels report`` from any folder.
Everything else is declared in pyproject.toml."""

from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent


class build_py_with_notebooks(build_py):  # noqa: N801 - setuptools' command naming
    def run(self) -> None:
        super().run()
        src = ROOT / "notebooks"
        if not src.is_dir():  # building from an sdist without them: nothing to add
            return
        dest = Path(self.build_lib) / "vgkernels" / "notebooks"
        self.mkpath(str(dest))
        for nb in sorted(src.glob("[0-9][0-9]_*.ipynb")):
            self.copy_file(str(nb), str(dest / nb.name))


setup(cmdclass={"build_py": build_py_with_notebooks})
