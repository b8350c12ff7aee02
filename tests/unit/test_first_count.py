"""The console's first counts taken by a forked process (backends/fs/first_count.py)."""

from __future__ import annotations

import os
import threading

import pytest

from qconsole.backends import open_target as Root
from qconsole.backends.fs import first_count
from qconsole.backends.fs.first_count import FirstCount
from qconsole.demo import build_fixture


def _fields(scan):
    return (scan.name, scan.layout, scan.counts, scan.by_priority, scan.oldest_ready_created, scan.next_deadline,
            scan.errors, scan.warnings, scan.id_unit)


@pytest.fixture(autouse=True)
def forkable(request, monkeypatch):
    """`qconsole ROOT` forks before any thread runs; earlier tests of this process (the console's,
    Redis clients) may have left idle ones, so the check is taken as passed here (but where it is
    the subject)."""
    if "thread" not in request.node.name:
        monkeypatch.setattr(first_count, "_single_threaded", lambda: True)


@pytest.fixture
def every_queue_big(monkeypatch):
    monkeypatch.setattr(first_count, "BIG_BYTES", 0)


def test_a_root_of_small_queues_forks_nothing(tmp_path):
    """Only queues over BIG_BYTES of listings are worth a process: the console counts the rest
    at once itself, and would only wait for a child counting them."""
    root = Root(build_fixture(str(tmp_path))[0])
    assert root.start_first_count() is None


def test_only_the_big_queues_are_counted_by_the_child(tmp_path, monkeypatch):
    root = Root(build_fixture(str(tmp_path))[0])
    sizes = {"emails": first_count.BIG_BYTES}
    monkeypatch.setattr(first_count, "dir_size", lambda paths: sizes.get(os.path.basename(paths[0]), 0))
    first = root.start_first_count()
    assert first is not None and first.names == {"emails"}
    got = first.take()
    assert got is not None and list(got) == ["emails"]


@pytest.mark.parametrize("which", [0, 1])
def test_the_forked_count_is_the_one_shot_count_of_every_queue(tmp_path, which, every_queue_big):
    root = Root(build_fixture(str(tmp_path))[which])
    first = root.start_first_count()
    assert first is not None
    got = first.take()
    want = root.scan(jobs=1).queues
    assert got is not None and sorted(got) == [q.name for q in want]
    assert [_fields(got[q.name]) for q in want] == [_fields(q) for q in want]
    assert first.take() is None  # taken once
    first.close()  # nothing left to stop


def test_a_failing_child_gives_nothing_and_the_console_counts_itself(tmp_path, monkeypatch, every_queue_big):
    root = Root(build_fixture(str(tmp_path))[0])
    monkeypatch.setattr(type(root), "scan", lambda self, *a, **k: 1 / 0)
    first = root.start_first_count()
    assert first is not None and first.take() is None


def test_no_fork_once_a_thread_runs(tmp_path, every_queue_big):
    root = Root(build_fixture(str(tmp_path))[0])
    stop = threading.Event()
    t = threading.Thread(target=stop.wait)
    t.start()
    try:
        assert not first_count._single_threaded()
        assert FirstCount.start(root) is None
    finally:
        stop.set()
        t.join()


def test_close_stops_a_child_not_taken(tmp_path, monkeypatch, every_queue_big):
    root = Root(build_fixture(str(tmp_path))[0])
    monkeypatch.setattr(type(root), "scan", lambda self, *a, **k: __import__("time").sleep(60))
    first = root.start_first_count()
    assert first is not None
    first.close()
    with pytest.raises(ChildProcessError):
        os.waitpid(first.pid, os.WNOHANG)  # reaped: no zombie left
    assert first.take() is None
