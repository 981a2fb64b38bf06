"""environment.yml (conda) stays in step with pyproject.toml (pip)."""

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
