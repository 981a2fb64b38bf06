"""Streaming: init, AAD, encrypt/decrypt in chunks of any size, finish.  (Placeholder until
written: builds nothing yet.)"""

from __future__ import annotations


def build_stream(module, params) -> None:
    return None
