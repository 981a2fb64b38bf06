"""How AesGcm reads the copy_below thresholds the notebook derives (package data)."""

from __future__ import annotations

import pytest

from vgkernels import api


@pytest.fixture
def derived(monkeypatch):
    table: dict = {}
    monkeypatch.setattr(api, "_DERIVED", table)
    return table


def test_backend_default_without_derived_data(derived):
    a = api.AesGcm(bytes(16), backend="aesni_pclmul")
    assert a._copy_threshold(None) == a.backend.copy_below
    assert a._copy_threshold(False) == (0, 0)
    assert a._copy_threshold((5, 7)) == (5, 7)


def test_derived_thresholds_and_null_meaning_always_copy(derived):
    derived["aesni_pclmul"] = {"aligned": 0, "unaligned": 208,
                               "measured": {"sizes": [17, 65537]}}
    a = api.AesGcm(bytes(16), backend="aesni_pclmul")
    assert a._copy_threshold(None) == (0, 208)
    derived["aesni_pclmul"] = {"aligned": None, "unaligned": 100,
                               "measured": {"sizes": [17, 65537]}}
    assert a._copy_threshold(None) == (65538, 100)
