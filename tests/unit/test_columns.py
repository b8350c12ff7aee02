"""One queue as columns (qconsole.columns, VSQS list_columns): the same messages as a collected
scan, relisting by difference after what live clients do, unchanged directories not listed."""

from __future__ import annotations

import os
import time
from typing import Any

import pytest

from qconsole.backends import open_target
from qconsole.backends.fs import root as fs_root
from qconsole.backends.fs import sorted_names as sn
from qconsole.backends.vsqs import columns as vcols
from qconsole import columns as qcols
from qconsole.columns import MessageColumns
from qconsole.model import Message

NOW = time.time()


@pytest.fixture(autouse=True, params=["lists", "arrays"])
def column_kind(request: Any, monkeypatch: Any) -> str:
    """Every test with short columns as lists (sums made when a relisting needs them) and as
    arrays (sums made with the listing), as a queue of more than SHORT_COLUMN rows has them."""
    if request.param == "arrays":
        monkeypatch.setattr(qcols, "SHORT_COLUMN", 0)
        monkeypatch.setattr(vcols, "SHORT_COLUMN", 0)
    return request.param


def us(t: float) -> int:
    return int(t * 1_000_000)


def touch(path: str, data: bytes = b"{}") -> None:
    with open(path, "wb") as fh:
        fh.write(data)


def seen(msgs: Any) -> list[tuple[Any, ...]]:
    return [(m.id, m.state, m.relpath, m.deadline, m.created_at, m.priority_text) for m in msgs]


def agrees(backend: Any, cols: MessageColumns, queue: str = "q") -> None:
    """Columns say what a collected scan taken now says: rows, counts, warnings, errors."""
    scan = backend.scan_queue(queue, NOW, collect=True)
    assert seen(cols) == seen(scan.messages)
    assert cols.scan.counts == scan.counts
    assert cols.scan.oldest_ready_created == scan.oldest_ready_created
    assert cols.scan.next_deadline == scan.next_deadline
    assert cols.scan.warnings == scan.warnings
    assert sorted(cols.scan.errors) == sorted(scan.errors)


@pytest.fixture
def vsqs(tmp_path: Any) -> tuple[Any, str]:
    q = tmp_path / "q"
    q.mkdir()
    start = us(NOW - 3600)
    for i in range(300):
        touch(str(q / str(start + i * 1000)))
    for i in range(6):  # in flight (3) and expired (3)
        touch(str(q / f"{start - 10_000 - i}.{us(NOW + (60 if i < 3 else -60) + i)}"))
    touch(str(q / f"{start + 999_999}.new"))
    touch(str(q / ".qconsole-tmp-1"))
    touch(str(q / "README"))
    return open_target(str(tmp_path)), str(q)


def test_columns_hold_what_a_collected_scan_holds(vsqs: Any, small_chunks: None) -> None:
    backend, _q = vsqs
    partial: list[MessageColumns] = []
    cols = backend.list_messages("q", NOW, progress=partial.append)
    agrees(backend, cols)
    assert cols.objects is None  # rows are made when asked for, not kept as objects
    assert cols.scan.counts["foreign"] == 1 and cols.scan.counts["writing"] == 2
    # the first rows came before the listing ended, in order, marked partial
    assert partial and all(p.partial for p in partial) and not cols.partial
    first = partial[0]
    assert 0 < len(first) < len(cols)
    ready = [m.id for m in first if m.state == "ready"]
    assert ready == sorted(ready)


def test_a_link_named_like_a_message_is_foreign(vsqs: Any, small_chunks: None) -> None:
    backend, q = vsqs
    os.symlink("/etc/passwd", os.path.join(q, str(us(NOW - 7200))))
    cols = backend.list_messages("q", NOW)
    agrees(backend, cols)
    assert cols.scan.counts["foreign"] == 2
    assert any("not a regular file" in e for e in cols.scan.errors)


def test_a_fifo_or_a_consumed_id_of_another_width_warns_of_no_mixed_units(vsqs: Any, small_chunks: None) -> None:
    """Only the ready ids that stay count for the units warning: not a FIFO named like an ms
    id, nor an ms id also held (consumed while the listing ran), as the exact count has it."""
    backend, q = vsqs
    os.mkfifo(os.path.join(q, str(int((NOW - 5000) * 1000))))
    ms = int((NOW - 4000) * 1000)
    touch(os.path.join(q, str(ms)))
    touch(os.path.join(q, f"{ms}.{int((NOW + 60) * 1000)}"))
    cols = backend.list_messages("q", NOW)
    agrees(backend, cols)
    assert cols.scan.warnings == [] and cols.ready_sorted


def test_mixed_id_widths_keep_numeric_order(vsqs: Any, small_chunks: None) -> None:
    backend, q = vsqs
    for i in range(5):
        touch(os.path.join(q, str(int((NOW - 5000) * 1000) + i)))  # ms ids beside µs ones
    cols = backend.list_messages("q", NOW)
    agrees(backend, cols)
    assert not cols.ready_sorted and cols.scan.warnings


def relist(backend: Any, cols: MessageColumns, spy: list[bool]) -> MessageColumns:
    cols.stamp = None  # as if the directory changed (a stamp can be equal within one tick)
    return backend.list_messages("q", NOW, previous=cols)


@pytest.fixture
def spy(monkeypatch: Any) -> list[bool]:
    """Whether each relisting took the head/tail path (True) or diffed by sets (False)."""
    calls: list[bool] = []
    real = vcols._head_and_tail

    def watched(*args: Any) -> Any:
        out = real(*args)
        calls.append(out is not None)
        return out

    monkeypatch.setattr(vcols, "_head_and_tail", watched)
    return calls


def ready_ids(q: str) -> list[str]:
    return sorted(n for n in os.listdir(q) if n.isdigit())


def test_consumers_take_the_head_and_producers_add_to_the_tail(vsqs: Any, small_chunks: None, spy: list[bool]) -> None:
    backend, q = vsqs
    cols = backend.list_messages("q", NOW)
    head = ready_ids(q)[:4]
    for n in head:  # consumed as vsqs does: renamed to <id>.<deadline>
        os.rename(os.path.join(q, n), os.path.join(q, f"{n}.{us(NOW + 30)}"))
    os.unlink(os.path.join(q, f"{head[0]}.{us(NOW + 30)}"))  # and one acknowledged
    for i in range(3):
        touch(os.path.join(q, str(us(NOW) + i)))
    after = relist(backend, cols, spy)
    assert spy == [True]
    agrees(backend, after)
    assert after.ids[0] == ready_ids(q)[0]
    # the ids kept are the very string objects of the last listing (no copy of a million names)
    assert after.ids[0] is cols.ids[4]


def test_a_requeue_or_a_delete_in_the_middle_is_found_by_difference(vsqs: Any, small_chunks: None,
                                                                     spy: list[bool]) -> None:
    backend, q = vsqs
    cols = backend.list_messages("q", NOW)
    held = sorted(n for n in os.listdir(q) if "." in n and n[0].isdigit() and not n.endswith(".new"))
    os.rename(os.path.join(q, held[0]), os.path.join(q, held[0].split(".")[0]))  # requeued: an old id
    os.unlink(os.path.join(q, ready_ids(q)[100]))  # deleted from the middle
    after = relist(backend, cols, spy)
    assert spy == [False]
    agrees(backend, after)
    # and the next relisting (nothing changed but the stamp) goes the quick way again
    again = relist(backend, after, spy)
    assert spy == [False, True]
    agrees(backend, again)


def test_a_relisting_sees_new_links_and_files_that_are_not_messages(vsqs: Any, small_chunks: None,
                                                                    spy: list[bool]) -> None:
    backend, q = vsqs
    cols = backend.list_messages("q", NOW)
    os.symlink("/etc/passwd", os.path.join(q, str(us(NOW) + 5)))
    touch(os.path.join(q, "notes.txt"))
    after = relist(backend, cols, spy)
    agrees(backend, after)
    assert after.scan.counts["foreign"] == 3


@pytest.fixture
def settled(monkeypatch: Any) -> None:
    """A directory counts as settled as soon as its times are in the past (not 2 s after)."""
    monkeypatch.setattr(fs_root, "STAMP_SETTLE_S", 0.0)
    time.sleep(0.05)


def test_an_unchanged_directory_is_not_listed_again(vsqs: Any, settled: None) -> None:
    backend, q = vsqs
    cols = backend.list_messages("q", NOW)
    assert backend.list_messages("q", NOW, previous=cols) is cols
    touch(os.path.join(q, str(us(NOW) + 1)))
    changed = backend.list_messages("q", NOW, previous=cols)
    assert changed is not cols and len(changed) == len(cols) + 1
    time.sleep(0.05)
    assert backend.list_messages("q", NOW, previous=changed) is changed


def test_a_freshly_changed_directory_is_listed_again_even_with_an_equal_stamp(vsqs: Any) -> None:
    backend, q = vsqs
    cols = backend.list_messages("q", NOW)  # just written: its mtime is within STAMP_SETTLE_S
    assert backend.list_messages("q", NOW, previous=cols) is not cols


def test_a_stamp_is_trusted_for_a_while_only(vsqs: Any, settled: None, monkeypatch: Any) -> None:
    backend, q = vsqs
    cols = backend.list_messages("q", NOW)
    assert backend.list_messages("q", NOW, previous=cols) is cols
    monkeypatch.setattr(fs_root, "FULL_RELIST_S", 0.0)  # NFS caches attributes: list again anyway
    assert backend.list_messages("q", NOW, previous=cols) is not cols


def test_the_merge_in_pieces_is_a_merge() -> None:
    import random

    rng = random.Random(7)
    for _ in range(50):
        a = sorted(str(rng.randrange(10**6, 10**7)) for _ in range(rng.randrange(0, 300)))
        b = sorted(str(rng.randrange(10**6, 10**7)) for _ in range(rng.randrange(0, 300)))
        assert sn.merge2(list(a), list(b), step=rng.randrange(1, 40)) == sorted(a + b)


# -- the columns themselves ------------------------------------------------------------------

def msgs() -> list[Message]:
    return [
        Message("q", "ddmq", "a", "ready", "5.1.ddmqa", 5, "5", 1.0),
        Message("q", "ddmq", "b", "ready", "5.2.ddmqb", 5, "5", 2.0),
        Message("q", "ddmq", "c", "inflight", "work/100.5.3.ddmqc", 5, "5", 3.0, 100.0),
        Message("q", "ddmq", "d", "inflight", "work/200.5.4.ddmqd", 5, "5", 4.0, 200.0),
        Message("q", "ddmq", "e", "expired", "work/50.5.5.ddmqe", 5, "5", 5.0, 50.0),
    ]


def test_columns_from_objects_index_select_and_drop() -> None:
    cols = MessageColumns.from_messages("q", msgs())
    assert cols == msgs() and len(cols) == 5 and cols[2].id == "c" and [m.id for m in cols[1:3]] == ["b", "c"]
    assert cols.index_of("d") == 3 and cols.index_of("zz") is None
    assert [m.id for m in cols.with_ids({"e", "a"})] == ["a", "e"]
    smaller = cols.without({"b", "d"})
    assert [m.id for m in smaller] == ["a", "c", "e"] and smaller.ready_n == 1
    assert [smaller.deadline_at(i) for i in range(3)][2] == 50.0


def test_a_float_column_is_a_list_while_short_and_an_array_past_it(column_kind: str) -> None:
    from array import array

    col = qcols.float_column(iter([1.5, qcols.NO_DEADLINE, 3.0]), 3)
    assert isinstance(col, array if column_kind == "arrays" else list)
    assert col[0] == 1.5 and col[1] != col[1] and col[2] == 3.0 and len(col) == 3
    col.extend([4.0])
    assert list(col)[3:] == [4.0]


def test_what_the_clock_turns_expired_is_counted_without_a_pass_over_the_rows() -> None:
    cols = MessageColumns.from_messages("q", msgs())
    assert cols.expired_since(150.0) == 1 and cols.expired_since(250.0) == 2 and cols.expired_since(10.0) == 0
    assert cols.rows_shown_as("expired", 150.0) == [2, 4]
    assert cols.rows_shown_as("inflight", 150.0) == [3]
    assert cols.rows_shown_as("ready", 150.0) == [0, 1]


def test_a_listing_pauses_for_the_screen_only_when_another_thread_runs(vsqs: Any) -> None:
    """The pauses between chunks let the console's drawing thread run; a one-shot ``ls`` (one
    thread) listed a 5-message queue 2.4 ms slower for them, and a million-name one ~60 ms.
    In a fresh process: pytest's own workers may run threads of their own."""
    import subprocess
    import sys

    code = ("import sys, threading, time\n"
            "from qconsole.backends import open_target\n"
            "from qconsole.backends.fs import sorted_names as sn\n"
            "sn.CHUNK, sn.FIRST_CHUNK, sn.YIELD_S = 32, 8, 0.001\n"
            "calls = []\n"
            "sn.time = type(sys)('clock'); sn.time.sleep = calls.append; sn.time.monotonic = time.monotonic\n"
            "backend = open_target(sys.argv[1])\n"
            "rows = len(backend.list_messages('q')); alone = len(calls)\n"
            "stop = threading.Event(); drawer = threading.Thread(target=stop.wait); drawer.start()\n"
            "backend.list_messages('q'); beside = len(calls) - alone\n"
            "stop.set(); drawer.join()\n"
            "print(rows, alone, beside)")
    out = subprocess.run([sys.executable, "-c", code, os.path.dirname(vsqs[1])], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert out.returncode == 0, out.stderr
    rows, alone, beside = map(int, out.stdout.split())
    assert rows == 307
    assert alone == 0
    assert beside >= 300 // 32


def test_numbers_with_a_leading_zero_are_foreign_in_the_listing_and_a_relisting(vsqs: Any, small_chunks: None,
                                                                                   spy: list[bool]) -> None:
    """vsqs int()s a name and renames str(int(name)): a planted 0<id>, <id>.0<deadline> or
    0<id>.new is listed by it and never acted on. The console's columns count them foreign and
    say why, as the scan does, on the first listing and when a relisting finds new ones."""
    backend, q = vsqs
    start = us(NOW - 3600)
    touch(os.path.join(q, "0" + str(start + 5)[1:]))
    cols = backend.list_messages("q", NOW)
    agrees(backend, cols)
    assert cols.scan.counts["foreign"] == 2 and cols.scan.counts["ready"] == 300
    assert any("leading zero" in e for e in cols.scan.errors)
    for name in ("0" + str(start + 7)[1:], f"{start + 9}.0{us(NOW + 60)}", f"0{start + 11}.new"):
        touch(os.path.join(q, name))
    after = relist(backend, cols, spy)
    agrees(backend, after)
    assert after.scan.counts["foreign"] == 5 and after.scan.counts["ready"] == 300
