from __future__ import annotations

import os
import signal
import sys
from collections.abc import Iterator
from typing import Any

import pytest

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "backends"))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "tui"))  # the Pilot helpers other suites reuse

from peers import ddmq_broker, vsqs_manager  # noqa: E402

# A suite started in the background of a script (`bash .ci/run &`) inherits SIGINT ignored, and
# so would every qconsole it starts: the ctrl+c tests would then wait on a process that rightly
# ignores SIGINT. A handler here (not SIG_IGN) gives the children the default again at exec.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


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
