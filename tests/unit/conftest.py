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


@pytest.fixture
def c_module() -> Any:
    """The C reader the install builds (backends/fs/_plain.c). Without it the test skips,
    except in CI (CI=true), where the install must have built it."""
    import os

    from qconsole.backends.fs import listing

    if listing.plain_c is None:
        if os.environ.get("CI") == "true":
            pytest.fail("qconsole.backends.fs._plain was not built (a C compiler and Python's headers)")
        pytest.skip("qconsole.backends.fs._plain not built here")
    return listing.plain_c


@pytest.fixture(params=["python", "c"])
def count_path(request: Any, monkeypatch: Any) -> str:
    """Both readers of plain queues: Python's, and the C one (:func:`c_module`). A test taking
    this runs once each way."""
    from qconsole.backends.fs import listing

    if request.param == "python":
        monkeypatch.setattr(listing, "plain_c", None)
    else:
        request.getfixturevalue("c_module")
    return request.param
