"""Bulk changes report progress on a terminal only; the batched ddmq requeue keeps every message."""

from __future__ import annotations

import io
import os

import pytest

from ops_inventory import inventory
from peers import ddmq_broker
from qconsole.backends import open_target
from qconsole.backends.fs import batches, claims
from qconsole.cli import ops as cli_ops
from qconsole.ops import Operations
from sync_hooks import SYNC_MODES, fail_files, hook_sync


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


def test_progress_writes_counts_as_the_question_and_the_summary_do():
    """A purge of 60,000 on a terminal asked 'Purge 60000 message(s) ...?', drew
    'purge: 30,720/60,000 (51%)' and ended 'purge big: 60000 done': one count, two spellings."""
    out = io.StringIO()
    p = cli_ops.Progress("purge", out, delay=0, every=0)
    p(30720, 60000)
    p.close()
    assert out.getvalue() == "\rpurge: 30720/60000 (51%)\x1b[K\r\x1b[K"


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


def test_a_batch_syncs_while_the_one_before_commits_and_two_at_most_are_claimed(tmp_path, monkeypatch):
    """The pipeline: batch k+1's fsyncs are handed out before batch k's commit renames, and no
    more than two batches' messages are ever claimed at once (what a kill leaves claimed)."""
    root = str(tmp_path / "d")
    b = ddmq_broker(root, "q")
    texts = {f"m-{i}" for i in range(40)}
    for t in sorted(texts):
        b.publish("q", t, clean=False)
    b.consume("q", n=40, clean=False)
    size = 8
    monkeypatch.setattr(type(open_target(root)), "REQUEUE_BATCH", size)
    work = os.path.join(root, "q", "work")
    events: list[str] = []
    most = [0]
    real_acquire, real_start, real_journal = claims.Claim.acquire, batches.BatchWriter._start_sync, \
        batches.BatchWriter._write_journal

    def acquire(self):
        most[0] = max(most[0], sum(n.startswith(".qconsole-claim-") for n in os.listdir(work)))
        return real_acquire(self)

    def start(self):
        events.append("sync")
        return real_start(self)

    def journal(self, entries):
        events.append("commit")
        return real_journal(self, entries)

    monkeypatch.setattr(claims.Claim, "acquire", acquire)
    monkeypatch.setattr(batches.BatchWriter, "_start_sync", start)
    monkeypatch.setattr(batches.BatchWriter, "_write_journal", journal)
    res = _ops(root).requeue("q", all_held=True)
    assert len(res.done) == 40 and not res.skipped
    assert events == ["sync", "sync", "commit", "sync", "commit", "sync", "commit", "sync", "commit", "commit"]
    assert size < most[0] <= 2 * size
    found, odd = inventory(root, "ddmq")
    assert not odd and set(found) == texts and set(found.values()) == {1}


@pytest.mark.parametrize("mode", SYNC_MODES)
def test_an_error_mid_batch_puts_every_claimed_message_back(tmp_path, monkeypatch, mode):
    root = str(tmp_path / "d")
    b = ddmq_broker(root, "q")
    texts = {f"m-{i}" for i in range(20)}
    for t in sorted(texts):
        b.publish("q", t, clean=False)
    b.consume("q", n=20, clean=False)
    full = [False]

    def failing(batch, _fd):
        if batch == 2:  # the second batch of 8
            full[0] = True
            raise OSError(28, "No space left on device")

    hook_sync(monkeypatch, mode, 8, failing)
    if mode == "syncfs":  # (and its own files' fsyncs then)
        fail_files(monkeypatch, lambda _fd: full[0], OSError(28, "No space left on device"))
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


def _vsqs_root(tmp_path, n: int) -> str:
    root = str(tmp_path / "v")
    for q in ("q", "dest"):
        os.makedirs(os.path.join(root, q))
    ops = _ops(root)
    ops.publish("q", [f"v-{i}".encode() for i in range(n)])
    return root


def _ddmq_root(tmp_path, n: int) -> str:
    root = str(tmp_path / "d")
    b = ddmq_broker(root, "q", "dest")
    for i in range(n):
        b.publish("q", f"d-{i}", clean=False)
    return root


def _hold_all(root: str, layout: str) -> None:
    if layout == "ddmq":
        ddmq_broker(root).consume("q", n=10_000, clean=False)
        return
    qdir = os.path.join(root, "q")
    for name in [x for x in os.listdir(qdir) if x.isdigit()]:
        os.rename(os.path.join(qdir, name), os.path.join(qdir, f"{name}.1"))  # expired long ago


@pytest.mark.parametrize("layout", ["vsqs", "ddmq"])
def test_every_bulk_operation_reports_progress(tmp_path, layout):
    """requeue, delete, purge (trash and not), move, trash restore, trash empty and publish all
    call the progress hook with the operation's total, up to the end."""
    n = 40
    root = (_vsqs_root if layout == "vsqs" else _ddmq_root)(tmp_path, n)

    def run(what, fn) -> None:
        ops = _ops(root)
        seen: list[tuple[int, int]] = []
        ops.root.progress = lambda done, total: seen.append((done, total))
        fn(ops)
        assert seen, f"{what}: no progress"
        assert {t for _d, t in seen} == {n}, (what, seen[:3])
        dones = [d for d, _t in seen]
        assert dones == sorted(dones) and dones[-1] >= n - 1, (what, dones[-3:])

    ids = lambda: [m.id for m in open_target(root).scan_queue("q", collect=True).messages]  # noqa: E731
    _hold_all(root, layout)
    run("requeue", lambda ops: ops.requeue("q", all_held=True))
    run("move", lambda ops: ops.move("q", "dest", all_=True))
    run("move back", lambda ops: ops.move("dest", "q", all_=True))
    run("purge", lambda ops: ops.purge("q"))
    run("trash restore", lambda ops: ops.trash_restore())
    run("delete", lambda ops: ops.delete("q", ids()))
    run("trash restore", lambda ops: ops.trash_restore())
    run("purge", lambda ops: ops.purge("q"))
    run("trash empty", lambda ops: ops.trash_empty())
    run("publish", lambda ops: ops.publish("q", [b'"x"'] * n))
    run("delete --no-trash", lambda ops: ops.delete("q", ids(), trash=False))


def test_claim_tokens_never_repeat_within_a_process():
    """300k tokens (a 100k requeue needs one per message, plus journals): all distinct, and
    each is 8 hex digits as recover's parser wants (random 32-bit tokens repeat here)."""
    toks = [claims.new_token() for _ in range(300_000)]
    assert len(set(toks)) == len(toks)
    assert all(len(t) == 8 and int(t, 16) >= 0 for t in toks[:1000])


def test_a_message_the_requeue_cannot_rewrite_goes_back_as_it_was(tmp_path, monkeypatch):
    """Larger than any body qconsole parses: not read at all. Any failure while rewriting one
    (MemoryError, a fault of ours): that message is put back, the others requeued, no claim left."""
    from qconsole import payload
    from qconsole.backends.ddmq import writes

    root = str(tmp_path / "d")
    b = ddmq_broker(root, "q")
    for i in range(6):
        b.publish("q", ("x" * 400 if i == 0 else f"m-{i}"), clean=False)
    b.consume("q", n=6, clean=False)
    monkeypatch.setattr(payload, "MAX_PARSE", 300)  # the first message's file is over it
    real = writes.requeued_body

    def fails_once(body, *a):
        if body.get("message") == "m-3":
            raise MemoryError()
        return real(body, *a)

    monkeypatch.setattr(writes, "requeued_body", fails_once)
    res = _ops(root).requeue("q", all_held=True)
    assert len(res.done) == 4
    reasons = sorted(reason for _id, reason in res.skipped)
    assert len(reasons) == 2 and reasons[0] == "left as it was: MemoryError", reasons
    assert "more than the 300 this file may have" in reasons[1], reasons
    scan = open_target(root).scan_queue("q")
    assert scan.counts["ready"] == 4 and scan.counts["inflight"] + scan.counts["expired"] == 2
    assert scan.counts["writing"] == 0  # no claim left behind
    found, odd = inventory(root, "ddmq")
    assert not odd and set(found.values()) == {1} and len(found) == 6
