"""Bulk changes report progress on a terminal only; the batched ddmq requeue keeps every message."""

from __future__ import annotations

import io
import os

from ops_inventory import inventory
from peers import ddmq_broker
from qconsole.backends import open_target
from qconsole.backends.fs import batches
from qconsole.cli import ops as cli_ops
from qconsole.ops import Operations


def _ops(root: str) -> Operations:
    return Operations(open_target(root), audit_log=os.path.join(root, "..", "audit.log"))


def test_progress_line_is_drawn_in_place_and_erased():
    out = io.StringIO()
    p = cli_ops.Progress("requeue", out, delay=0, every=0)
    for i in range(3):
        p(i, 3)
    p.close()
    assert out.getvalue() == ("\rrequeue: 0/3 (0%)\x1b[K\rrequeue: 1/3 (33%)\x1b[K\rrequeue: 2/3 (66%)\x1b[K"
                              "\r\x1b[K")
    quiet = io.StringIO()
    q = cli_ops.Progress("purge", quiet)  # a change quicker than the delay draws nothing
    q(1, 2)
    q.close()
    assert quiet.getvalue() == ""


def test_progress_only_on_a_terminal(tmp_path, monkeypatch):
    root = str(tmp_path / "r")
    ddmq_broker(root, "q")
    for tty, want in ((True, cli_ops.Progress), (False, type(None))):
        monkeypatch.setattr(cli_ops.sys.stderr, "isatty", lambda tty=tty: tty, raising=False)
        ops = cli_ops._ops(f"{root}", "auto", False, str(tmp_path / "audit.log"), refuse="requeue")
        assert isinstance(ops.root.progress, want)


def test_batched_ddmq_requeue_reports_progress_and_keeps_every_message(tmp_path, monkeypatch):
    root = str(tmp_path / "d")
    b = ddmq_broker(root, "q")
    texts = {f"m-{i}" for i in range(300)}
    for t in sorted(texts):
        b.publish("q", t, clean=False)
    b.consume("q", n=300, clean=False)
    monkeypatch.setattr(type(open_target(root)), "REQUEUE_BATCH", 64)  # several batches and a partial one
    ops = _ops(root)
    seen: list[tuple[int, int]] = []
    ops.root.progress = lambda done, total: seen.append((done, total))
    res = ops.requeue("q", all_held=True)
    assert len(res.done) == 300 and not res.skipped
    assert seen[0] == (0, 300) and seen[-1] == (300, 300) and len(seen) == 301
    found, odd = inventory(root, "ddmq")
    assert not odd and set(found) == texts and set(found.values()) == {1}
    assert open_target(root).scan_queue("q").counts["ready"] == 300


def test_an_error_mid_batch_puts_every_claimed_message_back(tmp_path, monkeypatch):
    root = str(tmp_path / "d")
    b = ddmq_broker(root, "q")
    texts = {f"m-{i}" for i in range(20)}
    for t in sorted(texts):
        b.publish("q", t, clean=False)
    b.consume("q", n=20, clean=False)
    calls = {"n": 0}
    real = batches._sync_close

    def failing(fd):
        calls["n"] += 1
        if calls["n"] == 10:  # in the second batch of 8
            os.close(fd)
            raise OSError(28, "No space left on device")
        return real(fd)

    monkeypatch.setattr(batches, "_sync_close", failing)
    monkeypatch.setattr(type(open_target(root)), "REQUEUE_BATCH", 8)
    try:
        _ops(root).requeue("q", all_held=True)
    except OSError:
        pass
    else:
        raise AssertionError("the barrier's error should propagate")
    found, odd = inventory(root, "ddmq")
    assert not odd and set(found) == texts and set(found.values()) == {1}
    scan = open_target(root).scan_queue("q")
    assert scan.counts["ready"] == 8 and scan.counts["inflight"] + scan.counts["expired"] == 12
    assert scan.counts["writing"] == 0  # no claim, tmp or journal left behind
