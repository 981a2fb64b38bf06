"""Shared fixtures: the `backend` fixture over every row of the backend table, one compile of
each kernel set per session, and the hypothesis profile."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

sys.path.insert(0, str(Path(__file__).resolve().parent))  # `import helpers` from test modules

from helpers import BACKEND_NAMES  # noqa: E402

from vgkernels.backends import availability  # noqa: E402
from vgkernels.build import Kernels, kernels  # noqa: E402
from vgkernels.variant import Variant

settings.register_profile(
    "vg", deadline=None, print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile("vg-ci", parent=settings.get_profile("vg"), derandomize=True)
settings.load_profile(os.environ.get("VG_HYPOTHESIS_PROFILE", "vg"))


class KernelSets:
    """Each (backend, variant) kernel set compiled (or loaded from the disk cache) once."""

    def __init__(self) -> None:
        self._sets: dict[tuple[str, Variant | None], Kernels] = {}

    def __call__(self, name: str, variant: Variant | None = None) -> Kernels:
        key = (name, variant)
        if key not in self._sets:
            self._sets[key] = kernels(name, variant)
        return self._sets[key]

    def __len__(self) -> int:
        return len(self._sets)


@pytest.fixture(scope="session")
def kernel_sets() -> KernelSets:
    return KernelSets()


def skip_unless_usable(name: str) -> None:
    """Skip (with the table's reason) a backend this CPU, or VG_CPU_FEATURES, rules out."""
    why = availability()[name]
    if why is not None:
        pytest.skip(f"backend {name} unavailable: {why}")


@pytest.fixture(scope="session", params=BACKEND_NAMES)
def backend(request: pytest.FixtureRequest, kernel_sets: KernelSets) -> str:
    """Name of a backend; every row of the table, skipped with its reason when unusable."""
    name = request.param
    skip_unless_usable(name)
    kernel_sets(name)
    return name


@pytest.fixture
def keep_affinity():
    """The timing driver pins when asked to; never leave the test process pinned."""
    before = os.sched_getaffinity(0)
    yield
    os.sched_setaffinity(0, before)


@pytest.fixture(scope="module")
def drv():
    """The native timing driver, unpinned (compiled once per module)."""
    from vgkernels.bench.driver import driver

    return driver(None, False)
