"""ctrl+c pressed twice during an RSMQ purge/move (race review): the second one landed while
the change's objects were being freed after the first (redis-py's ``Redis.__del__`` closing its
connections), and Python printed ``Exception ignored in: <function Redis.__del__ ...>``, a
traceback and ``KeyboardInterrupt`` under qconsole's own `interrupted: ...` line. Once the first
ctrl+c is caught, a second one is ignored while the change is torn down."""

from __future__ import annotations

import os
import signal
import sys

from qconsole.fastpath import guarded_call
from sigint_helper import restore_sigint


#: while the test runs: a _Connection freed later (kept by a cycle until some other test's
#: garbage collection) sent its SIGINT into that test (seen in CI: pyspark's handler, left by a
#: Spark test in the same worker, raised KeyboardInterrupt inside hypothesis's gc callback)
ARMED = [False]


class _Connection:
    """Stands for a Redis client whose finalizer runs when the stopped change is freed."""

    def __del__(self) -> None:
        if not ARMED[0]:
            return
        os.kill(os.getpid(), signal.SIGINT)  # the second ctrl+c, as the finalizer runs
        total = 0
        for i in range(10000):  # bytecodes for a Python-level handler to run in
            total += i


def _change() -> None:
    conn = _Connection()  # noqa: F841 (freed with this frame, once the interrupt is handled)
    raise KeyboardInterrupt


def test_a_second_ctrl_c_while_the_change_is_freed_prints_no_traceback(monkeypatch):
    unraisable = []
    monkeypatch.setattr(sys, "unraisablehook", unraisable.append)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)  # Python's own, as in `qconsole`
    ARMED[0] = True
    try:
        code = guarded_call(_change)
        after = signal.getsignal(signal.SIGINT)
    finally:
        ARMED[0] = False
        restore_sigint(previous)
    assert code == 130
    assert not unraisable, [u.exc_type for u in unraisable]
    assert after is signal.default_int_handler  # given back once the change is gone
