"""Tests that send ctrl+c (SIGINT) to their own process put SIGINT's handler back through here."""

from __future__ import annotations

import signal
import time
from typing import Any


def restore_sigint(previous: Any) -> None:
    """Put SIGINT's handler back once every ctrl+c the test sent has been handled: one still
    pending (delivered to a pool thread, seen by the main thread a moment later) reached the
    handler restored instead -- in an xdist worker that had run a Spark test, pyspark's, which
    raised KeyboardInterrupt inside a later test's gc callback (seen in CI)."""
    signal.signal(signal.SIGINT, lambda *_args: None)
    time.sleep(0.05)  # (the main thread runs pending handlers here)
    signal.signal(signal.SIGINT, previous)
