"""Fixtures the unit tests of the console's columns share."""

from __future__ import annotations

from typing import Any

import pytest

from qconsole.backends.fs import sorted_names as sn


@pytest.fixture
def small_chunks(monkeypatch: Any) -> None:
    """Many chunks, partial listings and pieces of merges even on a few hundred names."""
    monkeypatch.setattr(sn, "CHUNK", 32)
    monkeypatch.setattr(sn, "FIRST_CHUNK", 8)
    monkeypatch.setattr(sn, "PARTIAL_EVERY_S", 0.0)
    monkeypatch.setattr(sn, "PARTIAL_PAUSE_S", 0.0)
    monkeypatch.setattr(sn, "FIRST_PAUSE_S", 0.0)
    monkeypatch.setattr(sn, "YIELD_S", 0.0)
