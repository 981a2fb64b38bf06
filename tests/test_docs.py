"""docs/api.md cannot rot: its fenced python blocks run, in order, in one namespace."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
API = ROOT / "docs" / "api.md"
FENCE = re.compile(r"^```python\n(.*?)^```", re.M | re.S)


def blocks(path: Path) -> list[str]:
    return FENCE.findall(path.read_text())


def test_api_page_covers_every_call():
    text = "\n".join(blocks(API))
    for call in ("encrypt(", "decrypt(", "encrypt_in_place(", "decrypt_in_place(",
                 "encrypt_into(", "decrypt_into(", "encryptor(", "decryptor(", ".update(",
                 ".update_into(", ".finalize()", ".finalize_with_tag(",
                 "authenticate_additional_data(", "generate_key(", "bench.run(", "Variant(",
                 "copy_below="):
        assert call in text, f"docs/api.md has no example of {call}"


def test_api_page_examples_run(capsys):
    from vgkernels.backends import usable

    if not usable():
        pytest.skip("no usable backend")
    ns: dict = {"__name__": "docs_api"}
    for i, code in enumerate(blocks(API)):
        try:
            exec(compile(code, f"docs/api.md block {i + 1}", "exec"), ns)  # noqa: S102
        except Exception as e:  # name the block that broke, then fail
            raise AssertionError(f"docs/api.md block {i + 1} failed: {e!r}\n{code}") from e
    out = capsys.readouterr().out
    assert "rejected" in out and "closed" in out


def _undocumented(obj: object, name: str) -> list[str]:
    import inspect

    out = [] if inspect.getdoc(obj) else [name]
    if inspect.isclass(obj):
        for attr, member in vars(obj).items():
            if attr.startswith("_"):
                continue
            fn = member.fget if isinstance(member, property) else getattr(
                member, "__func__", member)
            if inspect.isfunction(fn) and not (fn.__doc__ or "").strip():
                out.append(f"{name}.{attr}")
    return out


def test_public_surface_outside_api_is_documented():
    """Every public class, method and function a user (or a notebook) calls, outside
    vgkernels.api (documented by its own owner), says what it does."""
    import importlib
    import inspect

    from vgkernels import bench

    missing = []
    for name in bench.__all__:
        obj = getattr(bench, name)
        if inspect.isclass(obj) or inspect.isfunction(obj):
            missing += _undocumented(obj, f"bench.{name}")
    for mod in ("vgkernels.selfcheck", "vgkernels.listing", "vgkernels.aot", "vgkernels.cli",
                "vgkernels.report.display", "vgkernels.report.pages",
                "vgkernels.report.batch", "vgkernels.report.session",
                "vgkernels.report.notebooks", "vgkernels.report.block_counts",
                "vgkernels.report.tail_sizes", "vgkernels.report.copy_below",
                "vgkernels.report.two_slice", "vgkernels.report.peers_roofline",
                "vgkernels.report.inventory", "vgkernels.report.constant_time",
                "vgkernels.report.prediction", "vgkernels.report.across_hosts",
                "vgkernels.report.peerset", "vgkernels.report.targets", "vgkernels.elf"):
        m = importlib.import_module(mod)
        for name, obj in vars(m).items():
            if name.startswith("_") or getattr(obj, "__module__", None) != mod:
                continue
            if inspect.isclass(obj) or inspect.isfunction(obj):
                missing += _undocumented(obj, f"{mod}.{name}")
    assert not missing, f"no docstring: {missing}"
