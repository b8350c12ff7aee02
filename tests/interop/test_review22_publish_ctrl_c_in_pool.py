"""ctrl+c while a publish batch waits on its fsyncs (review of publish batches, 32eac71): the
KeyboardInterrupt landed inside the thread pool's own machinery -- a submit holding the pool's
idle semaphore -- and left that lock held: every worker then blocked releasing it, the take-back's
``shutdown(wait=True)`` waited for them for good, and ``timeout -s INT 1.6 qconsole publish jobs x
-n 6000`` hung (seen after 15 minutes, 256 ``<id>.new`` files never taken back). The barrier
holds ctrl+c, as create-and-record and rename-and-count do (one hold for the whole batch): it is
raised once the batch is published, never inside the executor."""

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
from sync_hooks import SYNC_MODES, hook_sync


@pytest.mark.parametrize("mode", SYNC_MODES)
@pytest.mark.parametrize("layout", ["vsqs", "ddmq"])
def test_ctrl_c_during_the_fsync_barrier_never_lands_inside_the_thread_pool(tmp_path, monkeypatch, layout, mode):
    if threading.current_thread() is not threading.main_thread():
        pytest.skip("signals reach the main thread only")
    root = tmp_path / "r"
    (root / "q").mkdir(parents=True)
    if layout == "ddmq":
        (root / "q" / "work").mkdir()
        (root / "q" / "ddmq.yaml").write_text("")
    sent: list[int] = []
    main = threading.main_thread().ident

    def before(_batch: int, fd: int) -> None:
        if threading.current_thread() is not threading.main_thread() and not sent:
            sent.append(fd)
            signal.pthread_kill(main, signal.SIGINT)  # ctrl+c, while the main thread waits on the pool
            time.sleep(0.05)

    hook_sync(monkeypatch, mode, 256, before)
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
    # ctrl+c is held for a batch's few milliseconds of system calls: the batch it came in is
    # published whole, then the publish stops
    assert rec["outcome"] == "interrupted" and rec["count"] == len(names) == 256, (rec["count"], len(names))
