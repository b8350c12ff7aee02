from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from typing import Any

import pytest

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "backends"))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "tui"))  # the Pilot helpers other suites reuse

from peers import ddmq_broker, vsqs_manager  # noqa: E402


@pytest.fixture
def ddmq_root(tmp_path: Any) -> Iterator[tuple[str, Any]]:
    """(root path, real ddmq broker) with queue ``jobs`` created by ddmq."""
    root = str(tmp_path / "ddmq")
    yield root, ddmq_broker(root, "jobs")


@pytest.fixture
def vsqs_root(tmp_path: Any) -> Iterator[tuple[str, Any]]:
    """(root path, real vsqs QueueManager); queues appear when ``get_queue`` is called."""
    root = str(tmp_path / "vsqs")
    os.makedirs(root)
    manager = vsqs_manager(root)
    try:
        yield root, manager
    finally:
        manager.close()


@pytest.fixture(autouse=True)
def _no_env_leak(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests never inherit the operator's root or read-only setting."""
    for var in ("QCONSOLE_ROOT", "QCONSOLE_READ_ONLY", "SPARK_MASTER"):
        monkeypatch.delenv(var, raising=False)
