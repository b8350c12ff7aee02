"""ctrl+c while a publish batch waits on its fsyncs (review of publish batches, 32eac71): the
KeyboardInterrupt landed inside the thread pool's own machinery -- a submit holding the pool's
idle semaphore -- and left that lock held: every worker then blocked releasing it, the take-back's
``shutdown(wait=True)`` waited for them for good, and ``timeout -s INT 1.6 qconsole publish jobs x
-n 6000`` hung (seen after 15 minutes, 256 ``<id>.new`` files never taken back). The barrier
holds ctrl+c, as create-and-record and rename-and-count do: it is raised once every fsync of the
batch is back, never inside the executor."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
import traceback

import pytest

from qconsole.backends import open_target
from qconsole.ops import Operations
from sigint_helper import restore_sigint


@pytest.mark.parametrize("layout", ["vsqs", "ddmq"])
def test_ctrl_c_during_the_fsync_barrier_never_lands_inside_the_thread_pool(tmp_path, monkeypatch, layout):
    if threading.current_thread() is not threading.main_thread():
        pytest.skip("signals reach the main thread only")
    root = tmp_path / "r"
    (root / "q").mkdir(parents=True)
    if layout == "ddmq":
        (root / "q" / "work").mkdir()
        (root / "q" / "ddmq.yaml").write_text("")
    real = os.fsync
    sent: list[int] = []
    main = threading.main_thread().ident

    def fsync(fd: int) -> None:
        if threading.current_thread() is not threading.main_thread() and not sent:
            sent.append(fd)
            signal.pthread_kill(main, signal.SIGINT)  # ctrl+c, while the main thread waits on the pool
            time.sleep(0.05)
        real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    prev = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        ops = Operations(open_target(str(root)), audit_log=str(tmp_path / "audit"))
        with pytest.raises(KeyboardInterrupt) as info:
            ops.publish("q", [b'"x"'] * 600)
    finally:
        restore_sigint(prev)
    assert sent
    where = [f.f_code.co_filename for f, _line in traceback.walk_tb(info.value.__traceback__)]
    assert not [f for f in where if "concurrent" in f or f.endswith("threading.py")], where
    names = [n for n in os.listdir(root / "q") if n not in ("work", "ddmq.yaml")]
    assert not [n for n in names if n.endswith(".new") or n.startswith(".")], names[:5]
    rec = json.loads((tmp_path / "audit").read_text().splitlines()[-1])
    assert rec["outcome"] == "interrupted" and rec["count"] == len(names) == 0, (rec["count"], len(names))
