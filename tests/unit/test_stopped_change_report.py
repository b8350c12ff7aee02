"""A bulk change stopped half-way (ctrl+c, an error) reports what it did: the exception carries an
OpResult (``err.partial``) whose summary the CLI prints, and the audit line records the ids,
count and trash batch (review C, finding 8). Real VSQS roots; the stop comes from the progress
callback, as the console's "stop at a safe point" does."""

from __future__ import annotations

import json
import os

import pytest

from qconsole.backends import open_target
from qconsole.backends.fs import safety, trash
from qconsole import errors
from qconsole.errors import OperationError
from qconsole.ops.operations import Operations

BASE = 1_700_000_000_000_000


def _vsqs_root(tmp_path, n: int) -> str:
    root = tmp_path / "vsqs"
    (root / "q").mkdir(parents=True)
    for i in range(n):
        (root / "q" / str(BASE + i)).write_text(f'{{"i": {i}}}')
    return str(root)


def _stop_at(ops: Operations, done: int, stop: type[BaseException]) -> None:
    """Stop the change from its progress callback once ``done`` messages are through (as the
    console's stop at a safe point does)."""
    def tick(n: int, _total: int) -> None:
        if n >= done:
            raise stop("stopped by the test")

    ops.root.progress = tick


def _last(tmp_path) -> dict:
    return json.loads((tmp_path / "audit").read_text().splitlines()[-1])


@pytest.mark.parametrize("trash_on", [True, False], ids=["trash", "no-trash"])
@pytest.mark.parametrize("stop", [KeyboardInterrupt, OperationError], ids=["ctrl-c", "error"])
def test_a_stopped_purge_reports_and_logs_what_it_did(tmp_path, trash_on, stop):
    n = 3000
    root = _vsqs_root(tmp_path, n)
    ops = Operations(open_target(root), audit_log=str(tmp_path / "audit"))

    _stop_at(ops, 2048, stop)
    with pytest.raises(stop) as info:
        ops.purge("q", trash=trash_on)
    gone = n - len(os.listdir(os.path.join(root, "q")))
    part = info.value.partial
    rec = _last(tmp_path)
    assert rec["outcome"] == ("interrupted" if stop is KeyboardInterrupt else "error")
    assert rec["count"] == len(part.done) and rec["ids"] == part.done[:1000]
    if trash_on:
        with safety.Confined(root) as c:
            (batch,) = trash.batch_names(c)
        assert len(part.done) == gone > 0 and part.batch == rec["batch"] == batch
        line = errors.interrupted_line(info.value) if stop is KeyboardInterrupt else errors.error_line(info.value)[0]
        assert f"purge q: {gone} done; trash batch {batch} (undo: qconsole trash restore {batch})" in line
    else:  # never claims less than was done; what was in flight is said as unknown
        assert part.batch is None and len(part.done) <= gone <= len(part.done) + part.unknown
        assert len(part.done) + part.unknown > 0


@pytest.mark.parametrize("layout", ["vsqs", "ddmq"])
def test_an_interrupted_publish_still_reports_its_ids(tmp_path, layout):
    """The ids it did publish, and only those: stopped while writing its second batch, the
    first batch (PUBLISH_BATCH messages) is published, reported and logged; what the second
    had written is taken back (no ``.new``, no temp file left)."""
    from qconsole.backends.fs.publish_batches import PUBLISH_BATCH

    if layout == "vsqs":
        root, q = _vsqs_root(tmp_path, 0), "q"
    else:
        root, q = str(tmp_path / "d"), "q"
        os.makedirs(os.path.join(root, q, "work"))
        open(os.path.join(root, q, "ddmq.yaml"), "w").close()
    ops = Operations(open_target(root), audit_log=str(tmp_path / "audit"))

    _stop_at(ops, PUBLISH_BATCH + 5, KeyboardInterrupt)
    with pytest.raises(KeyboardInterrupt) as info:
        ops.publish(q, [b'"x"'] * (PUBLISH_BATCH * 3))
    rec = _last(tmp_path)
    done = info.value.partial.done
    assert rec["count"] == PUBLISH_BATCH == len(done) and rec["outcome"] == "interrupted"
    on_disk = [n for n in os.listdir(os.path.join(root, q)) if n not in ("work", "ddmq.yaml")]
    assert len(on_disk) == PUBLISH_BATCH and all(mid in " ".join(on_disk) for mid in done), on_disk[:5]
    assert not [n for n in on_disk if n.endswith(".new") or n.startswith(".")]


def test_a_stopped_move_reports_what_it_committed(tmp_path):
    root = _vsqs_root(tmp_path, 1000)
    os.mkdir(os.path.join(root, "dest"))
    ops = Operations(open_target(root), audit_log=str(tmp_path / "audit"))

    _stop_at(ops, 600, KeyboardInterrupt)
    with pytest.raises(KeyboardInterrupt) as info:
        ops.move("q", "dest", all_=True)
    moved = len(os.listdir(os.path.join(root, "dest")))
    assert 0 < moved < 1000 and len(info.value.partial.done) == moved == _last(tmp_path)["count"]
    assert f"move q to dest: {moved} done" in errors.interrupted_line(info.value)


def _held_root(tmp_path, n: int) -> str:
    root = tmp_path / "held"
    (root / "q").mkdir(parents=True)
    for i in range(n):  # consumed long ago: expired in-flight
        (root / "q" / f"{BASE + i}.1700000000").write_text("x")
    return str(root)


@pytest.mark.parametrize("stop", [KeyboardInterrupt, OperationError], ids=["ctrl-c", "error"])
def test_a_stopped_change_that_keeps_no_record_per_id_says_how_far_it_got(tmp_path, stop):
    """A file requeue keeps no per-id record while it runs (one batch of renames): stopped
    half-way it said nothing and logged count 0, with 11,724 of 20,000 requeued (review A #1).
    It now says and logs how far it got."""
    n = 3000
    root = _held_root(tmp_path, n)
    ops = Operations(open_target(root), audit_log=str(tmp_path / "audit"))

    _stop_at(ops, 1000, stop)
    with pytest.raises(stop) as info:
        ops.requeue("q", all_held=True)
    ready = sum(1 for n_ in os.listdir(os.path.join(root, "q")) if "." not in n_)
    part = info.value.partial
    processed, total = part.processed
    assert total == n and 0 < processed <= ready + 256, (processed, ready)
    rec = _last(tmp_path)
    assert rec["processed"] == [processed, total] and rec["count"] == 0
    line = errors.interrupted_line(info.value) if stop is KeyboardInterrupt else errors.error_line(info.value)[0]
    assert f"requeue q: stopped after about {processed} of {n}" in line, line
