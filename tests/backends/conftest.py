from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from stores import KITS, StoreKit  # noqa: E402 (tests/backends is on sys.path via rootdir conftest)


@pytest.fixture(params=sorted(KITS), ids=str)
def kit(request: pytest.FixtureRequest, tmp_path: Any) -> Iterator[StoreKit]:
    """Every kind of store, with its real client beside it."""
    k = KITS[request.param](tmp_path)
    try:
        yield k
    finally:
        k.close()
