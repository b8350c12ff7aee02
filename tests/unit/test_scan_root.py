"""Root handling: validation, layout detection, queue names, and the name-only promise."""

from __future__ import annotations

import builtins
import io
import os

import pytest

from qconsole.errors import MessageNotFoundError, QueueNameError, RootError, UnknownQueueError
from qconsole.backends import open_target as Root
from qconsole.backends.base import find_message, next_message
from qconsole.backends.fs.root import validate_queue_name
from unprivileged import MISSING, run_qconsole

QN = "1700000000123456"


def _vsqs_root(tmp_path, queues=10, per_queue=200):
    base = 1_700_000_000_000_000
    for q in range(queues):
        d = tmp_path / f"q{q}"
        d.mkdir()
        for i in range(per_queue):
            mid = base + q * 10_000 + i
            name = str(mid) if i % 3 else f"{mid}.{base + 10**9}"
            (d / name).write_bytes(b"payload")
    return str(tmp_path)


def _ddmq_root(tmp_path, queues=10, per_queue=200):
    (tmp_path / "ddmq.yaml").write_text("")
    for q in range(queues):
        d = tmp_path / f"q{q}"
        (d / "work").mkdir(parents=True)
        (d / "ddmq.yaml").write_text("message_timeout: 600\n")
        for i in range(per_queue):
            uid = "%032x" % (q * 100_000 + i)
            if i % 3:
                (d / f"999.{QN}{i}.ddmq{uid}").write_text('{"message": "x"}')
            else:
                (d / "work" / f"1800000000.999.{QN}{i}.ddmq{uid}").write_text('{"message": "x"}')
    return str(tmp_path)


@pytest.mark.parametrize("make, layout", [(_vsqs_root, "vsqs"), (_ddmq_root, "ddmq")])
def test_counting_never_opens_or_stats_a_message_file(tmp_path, monkeypatch, make, layout):
    """Counting reads directory listings only: no open/stat per message (proved by patching)."""
    root = Root(make(tmp_path), layout="auto")
    assert root.layout == layout
    calls: list[str] = []

    def spy(name, real):
        def wrapper(*args, **kwargs):
            calls.append(f"{name} {args[0] if args else ''}")
            return real(*args, **kwargs)
        return wrapper

    for mod, attr in ((os, "stat"), (os, "lstat"), (os, "open"), (builtins, "open"), (io, "open")):
        monkeypatch.setattr(mod, attr, spy(f"{mod.__name__}.{attr}", getattr(mod, attr)))
    real_scandir = os.scandir

    class NoStatEntry:
        """A DirEntry whose stat() must never be called."""

        def __init__(self, entry):
            self._e = entry

        def __getattr__(self, name):
            if name == "stat":
                calls.append(f"DirEntry.stat {self._e.name}")
            return getattr(self._e, name)

    class Scandir:
        def __init__(self, path):
            self._it = real_scandir(path)

        def __enter__(self):
            return (NoStatEntry(e) for e in self._it)

        def __exit__(self, *exc):
            self._it.close()

        def __iter__(self):
            return (NoStatEntry(e) for e in self._it)

    monkeypatch.setattr(os, "scandir", Scandir)
    scan = root.scan()
    monkeypatch.undo()
    assert scan.totals()["total"] == 2000
    touched = [os.path.basename(str(c.split(" ", 1)[1])) for c in calls]
    per_message = [n for n in touched if n[:1].isdigit()]  # every message name starts with a digit
    assert per_message == []
    assert len(calls) <= 5 * 10 + 5, calls[:20]


def test_detects_each_layout_and_honours_override(tmp_path, count_path):
    v = tmp_path / "v"
    (v / "jobs").mkdir(parents=True)
    (v / "jobs" / "1700000000000000").write_text("x")
    assert Root(str(v)).layout == "vsqs"
    d = tmp_path / "d"
    d.mkdir()
    (d / "ddmq.yaml").write_text("")
    assert Root(str(d)).layout == "ddmq"
    assert Root(str(d), layout="vsqs").layout == "vsqs"
    empty = tmp_path / "empty"
    (empty / "jobs").mkdir(parents=True)
    assert Root(str(empty)).layout == "vsqs"  # an empty queue directory is a fresh VSQS queue


def test_a_ddmq_queue_among_sub_directories_makes_a_root_ddmq_only_with_a_real_ddmq_yaml(tmp_path, count_path):
    """No ddmq.yaml at the top: any sub-directory with a regular ddmq.yaml and a real work/
    makes it ddmq (existence is looked up first, without raising per directory)."""
    root = tmp_path / "r"
    for i in range(5):
        (root / f"q{i}").mkdir(parents=True)
        (root / f"q{i}" / "1700000000000000").write_text("x")
    (root / "q3" / "ddmq.yaml").mkdir()  # a directory named ddmq.yaml is no ddmq marker
    (root / "q3" / "work").mkdir()
    os.mkfifo(root / "q1" / "ddmq.yaml")  # nor a FIFO (never opened)
    (root / "q1" / "work").mkdir()
    assert Root(str(root)).layout == "vsqs"
    (root / "q2" / "ddmq.yaml").write_text("")
    (root / "q2" / "work").symlink_to(root / "q3" / "work")  # a linked work/ is not followed
    assert Root(str(root)).layout == "vsqs"
    (root / "q4" / "ddmq.yaml").write_text("")
    (root / "q4" / "work").mkdir()
    assert Root(str(root)).layout == "ddmq"


@pytest.mark.parametrize(
    "setup, message",
    [
        (lambda p: str(p / "nope"), "does not exist"),
        (lambda p: (p / "f").write_text("x") and str(p / "f"), "is not a directory"),
        (lambda p: (p / "n" / "sub").mkdir(parents=True) or (p / "n" / "sub" / "readme.txt").write_text("x") and str(p / "n"), "neither layout"),
        (lambda p: None, "no root given"),
    ],
)
def test_bad_roots_are_one_clear_error(tmp_path, setup, message):
    with pytest.raises(RootError) as err:
        Root(setup(tmp_path))
    assert message in str(err.value) and "\n" not in str(err.value)


def test_unknown_layout_word(tmp_path):
    with pytest.raises(RootError, match="unknown layout"):
        Root(str(tmp_path), layout="kafka")


@pytest.mark.parametrize("name", ["a/b", "../x", "..", ".", "a\0b", ".hidden", "", "a\\b"])
def test_bad_queue_names_are_refused(name):
    with pytest.raises(QueueNameError):
        validate_queue_name(name)


def test_dot_dirs_and_symlinked_queues_are_never_queues(tmp_path):
    root = tmp_path / "root"
    (root / "jobs").mkdir(parents=True)
    (root / ".qconsole" ).mkdir()
    (root / ".qconsole" / "1700000000000000").write_text("x")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "1700000000000000").write_text("secret")
    os.symlink(outside, root / "escape")
    r = Root(str(root), layout="vsqs")
    scan = r.scan()
    assert [q.name for q in scan.queues] == ["jobs"]
    assert scan.errors == ["escape: symlink not followed"]
    for bad in ("escape", ".qconsole"):
        with pytest.raises((UnknownQueueError, QueueNameError)):
            r.scan_queue(bad)
    with pytest.raises(UnknownQueueError):
        r.scan(["missing"])


def test_find_and_next_message(tmp_path):
    q = tmp_path / "jobs"
    q.mkdir()
    for n in ("1700000000000002", "1700000000000001", "1700000000000000.1900000000000000"):
        (q / n).write_text("x")
    scan = Root(str(tmp_path)).scan_queue("jobs", collect=True)
    assert next_message(scan).id == "1700000000000001"
    assert find_message(scan, "1700000000000000").state == "inflight"
    assert find_message(scan, "1700000000000000.1900000000000000").id == "1700000000000000"
    with pytest.raises(MessageNotFoundError):
        find_message(scan, "42")
    (q / "1700000000000002").unlink()
    (q / "1700000000000001").unlink()
    with pytest.raises(MessageNotFoundError, match="no ready message"):
        next_message(Root(str(tmp_path)).scan_queue("jobs", collect=True))


@pytest.mark.skipif(MISSING is not None, reason=str(MISSING))
def test_unreadable_root_is_refused(tmp_path):
    (tmp_path / "r").mkdir(mode=0)
    try:
        res = run_qconsole("stats", str(tmp_path / "r"), "--json")
    finally:
        (tmp_path / "r").chmod(0o755)
    assert res.returncode == 2 and "permission denied" in res.stderr and not res.stdout, res.stderr


def test_unreadable_root_is_refused_simulated(tmp_path, monkeypatch):
    monkeypatch.setattr(os, "access", lambda *a, **k: False)
    with pytest.raises(RootError, match="permission denied"):
        Root(str(tmp_path))


@pytest.mark.parametrize("jobs", [1, 2])
@pytest.mark.parametrize("check_types", [False, True])
def test_a_ddmq_root_counted_before_its_queues_are_looked_into_gives_what_the_checked_listing_gives(
        c_module, tmp_path, monkeypatch, jobs, check_types):
    """With the C reader a ddmq root's sub-directories are checked where they are counted
    (queue_candidates, then count_many(unchecked=True) in the forked scanners); every kind of
    sub-directory that is no queue is still left out, with the same line, and every queue that
    is one (plain, unusual, unreadable, -q) is counted as the checked listing counts it."""
    from qconsole.backends.ddmq import layout as ddmq

    root = _ddmq_root(tmp_path, queues=4, per_queue=6)
    (tmp_path / "q1" / "notes.txt").write_text("")  # a queue with a foreign file: the exact way
    (tmp_path / "plain").mkdir()  # no ddmq.yaml: no queue, no word
    (tmp_path / "linked-work" / "x").mkdir(parents=True)
    (tmp_path / "linked-work" / "ddmq.yaml").write_text("")
    os.symlink(tmp_path / "linked-work" / "x", tmp_path / "linked-work" / "work")
    (tmp_path / "fifo-config" / "work").mkdir(parents=True)
    os.mkfifo(tmp_path / "fifo-config" / "ddmq.yaml")
    os.symlink(tmp_path / "q0", tmp_path / "linked-queue")
    (tmp_path / "a-file").write_text("")

    def summary(scan):
        return ([(q.name, q.layout, q.counts, q.errors) for q in scan.queues], sorted(scan.errors), scan.per_queue)

    each = lambda q, now: (q.name, q.counts["ready"])  # noqa: E731  (what a forked scanner makes of a queue)
    deferred = Root(root).scan(jobs=jobs, check_types=check_types, each=each)
    picked = Root(root).scan(["q2", "q0"], jobs=jobs, check_types=check_types)
    monkeypatch.setattr(ddmq, "queue_candidates", lambda root: None)  # the checked listing first
    checked = Root(root).scan(jobs=jobs, check_types=check_types, each=each)
    assert summary(deferred) == summary(checked)
    assert [q.name for q in deferred.queues] == ["q0", "q1", "q2", "q3"]
    assert sorted(deferred.errors) == sorted([
        "linked-work: work/ is a symlink, not followed", "linked-queue: symlink not followed",
        "fifo-config: ddmq.yaml is no regular file (a directory, a FIFO, a link to a device or to nothing): "
        "not a queue, not counted"])
    assert [q.name for q in picked.queues] == ["q2", "q0"]


@pytest.mark.parametrize("layout", ["vsqs", "ddmq"])
def test_a_queue_swapped_for_a_symlink_after_the_listing_is_not_followed_out_of_the_root(tmp_path, layout, count_path):
    """Between the root's listing and a queue's count, a queue directory (or ddmq's work/) may
    be swapped for a link to a directory outside the root: nothing there is counted, by either
    reader, and the queue says why (found by the review of the C reader)."""
    import time

    from qconsole.backends.ddmq import layout as ddmq
    from qconsole.backends.vsqs import layout as vsqs

    outside = tmp_path / "outside"
    (outside / "work").mkdir(parents=True)
    (outside / "1700000000000000").write_text("x")
    (outside / "9.17000000001.ddmqab").write_text("x")
    (outside / "work" / "1700000000.9.17000000002.ddmqcd").write_text("x")
    root = tmp_path / "root"
    root.mkdir()
    os.symlink(outside, root / "q")  # the whole queue
    (root / "r").mkdir()  # ddmq: a real queue whose work/ is a link
    (root / "r" / "ddmq.yaml").write_text("")
    os.symlink(outside / "work", root / "r" / "work")
    module = vsqs if layout == "vsqs" else ddmq
    now = time.time()
    names = ["q"] if layout == "vsqs" else ["q", "r"]
    for scans in (module.count_many(str(root), names, now), [module.scan_queue(str(root), n, now) for n in names],
                  [module.scan_queue(str(root), n, now, check_types=True) for n in names]):
        for scan in scans:
            assert scan.counts["ready"] == scan.counts["inflight"] == scan.counts["expired"] == 0, scan
            assert any("a symlink, not followed" in e for e in scan.errors), scan.errors
