"""environment.yml (conda) stays in step with pyproject.toml (pip); a wheel installed into a
fresh venv runs the report from any folder."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def _name(spec: str) -> str:
    return re.split(r"[<>=!~ \[]", spec.strip(), maxsplit=1)[0].lower().replace("_", "-")


def _pins(specs: list[str]) -> dict[str, str]:
    return {_name(s): s.replace(" ", "")[len(_name(s)):] for s in specs}


def test_environment_matches_pyproject():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    want = _pins(project["dependencies"] + project["optional-dependencies"]["test"])
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    have: dict[str, str] = {}
    for dep in env["dependencies"]:
        if isinstance(dep, dict):
            have.update(_pins([d for d in dep["pip"] if not d.startswith("-")]))
        elif not dep.startswith(("python", "pip")) or dep.startswith("python-"):
            have.update(_pins([dep]))
    assert have == want, (
        f"missing from environment.yml: {sorted(set(want) - set(have))}; "
        f"extra: {sorted(set(have) - set(want))}; "
        f"different pins: {sorted(k for k in want if k in have and want[k] != have[k])}")
    python = [d for d in env["dependencies"] if isinstance(d, str) and d.startswith("python")]
    assert python == [f"python{project['requires-python']}"]


def test_wheel_installed_elsewhere_runs_the_report(tmp_path):
    """Installed as users install packages (a wheel, not editable, into a fresh venv), from a
    folder that is not a checkout: the notebooks ship inside the package, ``vgkernels
    notebooks DIR`` copies them out and ``vgkernels report`` writes under the current folder.
    The venv reuses this environment's packages for the dependencies (a .pth line, and
    JUPYTER_PATH for their data files), so no network is needed beyond the build backend from
    the configured index; the report runs
    notebook 02 only, to keep the test under a minute."""
    import os
    import site
    import subprocess
    import sys
    import sysconfig

    from vgkernels.report import notebooks as nbs

    wheels = tmp_path / "wheels"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(wheels),
                    str(ROOT)], check=True, capture_output=True, timeout=600)
    (wheel,) = wheels.glob("vgkernels-*.whl")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    py = venv / "bin" / "python"
    purelib = subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_path("
                              "'purelib'))"], check=True, capture_output=True,
                             text=True).stdout.strip()
    here = [p for p in {sysconfig.get_path("purelib"), sysconfig.get_path("platlib"),
                        *site.getsitepackages()} if Path(p).is_dir()]
    (Path(purelib) / "host-deps.pth").write_text("\n".join(here) + "\n")
    subprocess.run([sys.executable, "-m", "pip", "--python", str(py), "install", "-q",
                    "--no-deps", "--no-index", str(wheel)], check=True, capture_output=True,
                   timeout=300)
    work = tmp_path / "elsewhere"
    work.mkdir()
    env = {k: v for k, v in os.environ.items()
           if k not in ("VIRTUAL_ENV", "JUPYTER_PATH", "PYTHONPATH", "VG_NOTEBOOKS")}
    # the borrowed packages' data files (nbconvert's templates) stay under this prefix
    env["JUPYTER_PATH"] = str(Path(sys.prefix) / "share" / "jupyter")
    where = subprocess.run([str(py), "-c", "import vgkernels; print(vgkernels.__file__)"],
                           cwd=work, env=env, check=True, capture_output=True, text=True)
    assert where.stdout.strip().startswith(purelib), where.stdout  # the wheel, not the checkout
    exe = venv / "bin" / "vgkernels"
    subprocess.run([str(exe), "notebooks", "lab"], cwd=work, env=env, check=True,
                   capture_output=True, timeout=120)
    assert sorted(p.stem for p in (work / "lab").glob("*.ipynb")) == list(nbs.NOTEBOOKS)
    proc = subprocess.run([str(exe), "report", "--profile", "tiny", "--only", "02",
                           "--no-progress"], cwd=work, env=env, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (report,) = (work / "reports").iterdir()  # under the current folder
    assert (report / "index.html").exists() and (report / "02_block_counts.html").exists()
    idx = (report / "index.html").read_text()
    assert "02_block_counts.html" in idx and "smoke test, not for conclusions" in idx.lower()
