"""The batch forms of a bulk change (safety.check_names, DirPair.renames/renames_noreplace/
unlinks, vsqs requeue_many, FsRoot.remove): one tight loop for 100k messages that must
keep every rule of the one-name path -- names checked, nothing replaced, races left as
they were, a non-race error stopping the batch, and a trash batch recording what it holds
even when stopped halfway."""

from __future__ import annotations

import errno
import json
import os
import random
import shutil

import pytest

from qconsole.backends import open_target
from qconsole.backends.fs import listing as listing_module, safety, trash
from qconsole.backends.vsqs import writes
from qconsole.errors import OperationError
from qconsole.ops.operations import Operations
from qconsole.backends.results import ALREADY_READY, CHANGED

BASE = 1_700_000_000_000_000
PAST = 1_600_000_000_000_000


def _check_one(names: list) -> str | None:
    for n in names:
        try:
            safety.check_name(n)
        except safety.UnsafePathError as err:
            return str(err)
    return None


def _check_all(names: list) -> str | None:
    try:
        safety.check_names(names)
    except safety.UnsafePathError as err:
        return str(err)
    return None


@pytest.mark.parametrize("bad", [".", "..", "", "a/b", "/a", "a/", "a\0b", "a\\b", "x" * 256, "é" * 128, 7, None,
                                 "\udcff" * 256])
def test_the_batch_name_check_refuses_what_the_one_name_check_refuses(bad):
    for names in ([bad], ["1", bad], ["1", "2", bad, "3"], [bad, "."]):
        assert _check_all(names) == _check_one(names) is not None, names


def test_the_batch_name_check_agrees_with_the_one_name_check_on_random_batches():
    rnd = random.Random(7)
    alphabet = ["1", "2", ".", "/", "\\", "\0", "a", "é", "\n", " "]
    for _ in range(3000):
        names = ["".join(rnd.choice(alphabet) for _ in range(rnd.randint(0, 4))) for _ in range(rnd.randint(0, 5))]
        if rnd.random() < 0.05:
            names.append("7" * rnd.choice([63, 64, 255, 256]))
        assert _check_all(names) == _check_one(names), names
    safety.check_names(["1.2", "..3", "...", "a.", "é" * 63, "1" * 255])  # all plain names


def _pair(tmp_path, c: safety.Confined, src: str = "q", dst: str = "q") -> safety.DirPair:
    return c.pair(str(tmp_path / src), str(tmp_path / dst))


@pytest.mark.parametrize("renameat2", [True, False])
def test_no_replace_batch_leaves_taken_and_gone_names_and_goes_on(tmp_path, monkeypatch, renameat2):
    if not renameat2:
        monkeypatch.setattr(safety, "_RENAMEAT2", False)
    q = tmp_path / "q"
    q.mkdir()
    for n in ("a", "b", "c"):
        (q / f"{n}.1").write_text(n)
    (q / "b").write_text("someone else's")
    with safety.Confined(str(tmp_path)) as c:
        errs = _pair(tmp_path, c).renames_noreplace(["a.1", "b.1", "gone.1", "c.1"], ["a", "b", "gone", "c"])
    if renameat2:
        assert errs == [0, errno.EEXIST, errno.ENOENT, 0]
        assert sorted(os.listdir(q)) == ["a", "b", "b.1", "c"]
    else:  # nothing tried: the caller takes each through the one-name path
        assert errs == [safety.NOT_TRIED] * 4
        assert sorted(os.listdir(q)) == ["a.1", "b", "b.1", "c.1"]
    assert (q / "b").read_text() == "someone else's"


def test_a_batch_stops_at_the_first_error_that_is_not_a_race(tmp_path):
    q = tmp_path / "q"
    q.mkdir()
    for n in ("1", "2", "4"):
        (q / n).write_text(n)
    (q / "3").mkdir()  # unlink of a directory: EISDIR (or EPERM), not a race
    with safety.Confined(str(tmp_path)) as c:
        errs = _pair(tmp_path, c).unlinks(["1", "gone", "3", "4"])
    assert errs[:2] == [0, errno.ENOENT]
    assert errs[2:] == [safety.NOT_TRIED, safety.NOT_TRIED]
    assert sorted(os.listdir(q)) == ["2", "3", "4"]


def test_a_batch_refuses_a_bad_name_before_it_changes_anything(tmp_path):
    q = tmp_path / "q"
    q.mkdir()
    (q / "1").write_text("1")
    with safety.Confined(str(tmp_path)) as c:
        pair = _pair(tmp_path, c)
        for call in (lambda: pair.unlinks(["1", "../q/1"]), lambda: pair.renames(["1"], [".."]),
                     lambda: pair.renames_noreplace(["1", "x/y"], ["2", "3"])):
            with pytest.raises(safety.UnsafePathError):
                call()
    assert os.listdir(q) == ["1"]


def test_the_batch_requeue_treats_each_id_as_the_one_name_requeue_does(tmp_path):
    q = tmp_path / "q"
    q.mkdir()
    held = []
    for i in range(6):
        (q / f"{BASE + i}.{PAST + i}").write_text(f"m{i}")
        held.append((str(BASE + i), f"{BASE + i}.{PAST + i}"))
    (q / f"{BASE + 1}").write_text("ready under the same id already")
    (q / f"{BASE + 2}.{PAST + 99}").write_text("the same id held twice")
    os.unlink(q / f"{BASE + 3}.{PAST + 3}")  # consumed since the scan
    os.rename(q / f"{BASE + 4}.{PAST + 4}", q / f"{BASE + 4}")  # requeued by a consumer since the scan
    ticks = []
    with safety.Confined(str(tmp_path)) as c:
        reasons = writes.requeue_many(c, str(q), [m for m, _ in held], [r for _, r in held], ticks.append)
    assert reasons[0] is None and reasons[5] is None
    assert "also live as" in reasons[1] and "also live as" in reasons[2]
    assert reasons[3] == CHANGED
    assert reasons[4] == ALREADY_READY
    assert (q / f"{BASE + 1}").read_text() == "ready under the same id already"
    assert {f"{BASE}", f"{BASE + 5}", f"{BASE + 1}.{PAST + 1}", f"{BASE + 2}.{PAST + 2}"} <= set(os.listdir(q))
    assert ticks[-1] == len(held)


def _vsqs_root(tmp_path, n: int) -> str:
    root = tmp_path / "root"
    (root / "q").mkdir(parents=True)
    for i in range(n):
        (root / "q" / str(BASE + i)).write_text(f'{{"i": {i}}}')
    return str(root)


def test_a_purge_stopped_halfway_keeps_every_moved_message_restorable(tmp_path):
    """ctrl+c in the middle of the batch: what went into the trash is in the batch's
    manifest and comes back with trash restore; the rest never left the queue."""
    n = 3000
    root = _vsqs_root(tmp_path, n)
    ops = Operations(open_target(root), audit_log=str(tmp_path / "audit"))

    def stop(done: int, total: int) -> None:
        if done >= 2048:
            raise KeyboardInterrupt

    ops.root.progress = stop
    with pytest.raises(KeyboardInterrupt):
        ops.purge("q")
    left = set(os.listdir(os.path.join(root, "q")))
    assert 0 < len(left) < n
    with safety.Confined(root) as c:
        (batch,) = trash.batch_names(c)
    with open(os.path.join(trash.batch_dir(root, batch), trash.MANIFEST)) as fh:
        doc = json.load(fh)  # the whole record (readers take the head only)
    assert {item["id"] for item in doc["items"]} == {str(BASE + i) for i in range(n)} - left
    ops = Operations(open_target(root), audit_log=str(tmp_path / "audit"))
    ops.trash_restore()
    assert sorted(os.listdir(os.path.join(root, "q"))) == sorted(str(BASE + i) for i in range(n))


def test_a_trash_batch_with_a_file_no_item_names_is_kept(tmp_path):
    """A move stopped between its rename and its record leaves a file no item names: the
    batch is published (and restorable), never removed with the file in it."""
    root = _vsqs_root(tmp_path, 1)
    with safety.Confined(root) as c:
        filling = trash.Filling(c, "purge", "q", "vsqs", "me")
        os.rename(os.path.join(root, "q", str(BASE)), filling.path(str(BASE)))
        batch = filling.finish([])
        assert batch in trash.batch_names(c)
    Operations(open_target(root), audit_log=str(tmp_path / "audit")).trash_restore(batch)
    assert os.listdir(os.path.join(root, "q")) == [str(BASE)]


def test_an_empty_trash_batch_leaves_nothing_behind(tmp_path):
    root = _vsqs_root(tmp_path, 1)
    with safety.Confined(root) as c:
        assert trash.Filling(c, "purge", "q", "vsqs", "me").finish([]) is None
        assert os.listdir(trash.trash_dir(root)) == []


def test_purge_and_delete_in_batches_report_each_message_in_order(tmp_path):
    """Two directories of a ddmq queue, a name gone since the scan: outcomes in the order asked."""
    root = _vsqs_root(tmp_path, 50)
    ops = Operations(open_target(root), audit_log=str(tmp_path / "audit"))
    ids = [str(BASE + i) for i in range(0, 50, 3)]
    scan = ops.root.scan_queue("q", collect=True)
    msgs = [m for m in scan.messages if m.id in set(ids)]
    os.unlink(os.path.join(root, "q", ids[2]))
    for use_trash in (True, False):
        outcomes, _batch = ops.root.remove("delete", "q", msgs, use_trash=use_trash, user="me")
        assert [mid for mid, _ in outcomes] == [m.id for m in msgs]
        want = {ids[2]} if use_trash else set(ids)  # the second pass finds every one gone
        assert {mid for mid, why in outcomes if why == CHANGED} == want


def test_a_trash_on_another_mount_is_refused_in_words(tmp_path, monkeypatch):
    root = _vsqs_root(tmp_path, 3)
    real = os.rename

    def exdev(src, dst, *a, **kw):
        if isinstance(src, str) and src.isdigit():
            raise OSError(errno.EXDEV, "Invalid cross-device link")
        return real(src, dst, *a, **kw)

    monkeypatch.setattr(os, "rename", exdev)
    with pytest.raises(OperationError, match="another file system"):
        Operations(open_target(root), audit_log=str(tmp_path / "audit")).purge("q")
    monkeypatch.setattr(os, "rename", real)
    assert len(os.listdir(os.path.join(root, "q"))) == 3


@pytest.mark.parametrize("renameat2", [True, False])
def test_the_batch_restore_keeps_the_one_name_rules(tmp_path, monkeypatch, renameat2):
    """A restore batch: the plain files come back; an id live in the queue again, a file with
    another hard link and a second file of one id stay in the trash, with their reasons --
    with renameat2 (the batch) and without it (one by one), the same result."""
    if not renameat2:
        monkeypatch.setattr(safety, "_RENAMEAT2", False)
    n = 30
    root = _vsqs_root(tmp_path, n)
    ops = Operations(open_target(root), audit_log=str(tmp_path / "audit"))
    batch = ops.purge("q").batch
    files = os.path.join(trash.batch_dir(root, batch), trash.FILES, "q")
    (tmp_path / "root" / "q" / str(BASE + 1)).write_text("published again under the same id")
    os.link(os.path.join(files, str(BASE + 2)), tmp_path / "elsewhere")
    (tmp_path / files / f"{BASE + 3}.{PAST}").write_text("the same id, held")  # a second file of id BASE+3
    ticks = []
    ops.root.progress = lambda done, total: ticks.append((done, total))
    res = ops.trash_restore(batch)
    assert set(os.listdir(os.path.join(root, "q"))) == {str(BASE + i) for i in range(n) if i != 2}
    assert (tmp_path / "root" / "q" / str(BASE + 1)).read_text() == "published again under the same id"
    left = set(os.listdir(files))
    twins = {str(BASE + 3), f"{BASE + 3}.{PAST}"}  # one comes back (which one: listing order)
    (twin,) = left & twins
    assert left == {str(BASE + 1), str(BASE + 2), twin}
    why = dict(res.skipped)
    assert set(why) == left, why
    assert "in the queue already" in why[str(BASE + 1)] and "in the queue already" in why[twin]
    assert "hard links" in why[str(BASE + 2)]
    dones = [d for d, _t in ticks]
    assert dones == sorted(dones) and dones[-1] == n + 1 and {t for _d, t in ticks} == {n + 1}


def _fields(msgs) -> list[tuple]:
    return [tuple(getattr(m, f) for f in m.__slots__) for m in msgs]


def _mixed_queue(root, layout: str, seed: int = 3) -> None:
    """Queue q of ``root``: 400 messages, ready, held (half of them expired) and being written,
    and a file that is no message."""
    import time

    now = time.time()
    rnd = random.Random(seed)
    q = root / "q"
    (q / "work").mkdir(parents=True) if layout == "ddmq" else q.mkdir(parents=True)
    if layout == "ddmq":
        (q / "ddmq.yaml").write_text("message_timeout: 600\n")
    for i in range(400):
        mid = BASE + i
        dl = int((now + rnd.choice([-1, 1]) * rnd.randint(1, 900)) * (1_000_000 if layout == "vsqs" else 1))
        kind = rnd.choice(["ready", "held", "held", "writing"])
        if layout == "vsqs":
            name = {"ready": f"{mid}", "held": f"{mid}.{dl}", "writing": f"{mid}.new"}[kind]
            (q / name).write_text("x")
        else:
            prio = rnd.choice(["0", "5", "10"])
            qn = str(mid)[:10] + "123456"
            if kind == "held":
                (q / "work" / f"{dl}.{prio}.{qn}.ddmq{mid:x}").write_text("x")
            else:
                (q / f"{prio}.{qn}.ddmq{mid:x}").write_text("x")
    (q / "not-a-message").write_text("x")


@pytest.mark.parametrize("layout", ["vsqs", "ddmq"])
def test_the_held_listing_is_the_collected_scans_held_messages(tmp_path, layout):
    """A requeue by state lists the held messages only (collect="held"): the same messages,
    fields and order as a full collected scan's held ones, with ready, writing and foreign
    names around them."""
    _mixed_queue(tmp_path, layout)
    target = open_target(str(tmp_path))
    full = target.scan_queue("q", collect=True).held_messages()
    assert len(full) > 100
    assert _fields(target.held_messages("q")) == _fields(full)


def _held_only_queue(root) -> None:
    """Queue q of ``root``: 300 held messages only (the odd ids expired; the listing a requeue
    pass reads column-wise), one id held under two deadlines, one also ready."""
    import time

    now = time.time()
    q = root / "q"
    q.mkdir(parents=True)
    for i in range(300):
        (q / f"{BASE + i}.{int((now + (-600 if i % 2 else 600)) * 1_000_000)}").write_text("x")
    (q / f"{BASE + 7}.{PAST}").write_text("x")  # id BASE+7 under two names
    (q / f"{BASE + 9}").write_text("x")  # id BASE+9 held and ready


def _plain_held_queue(root) -> None:
    """Queue q of ``root``: 300 held messages only, each id once (the listing a requeue pass
    usually reads: the short way, whose batch does not count the names again)."""
    import time

    now = time.time()
    q = root / "q"
    q.mkdir(parents=True)
    for i in range(300):
        (q / f"{BASE + i}.{int((now + (-600 if i % 3 else 600)) * 1_000_000)}").write_text("x")


@pytest.mark.parametrize("queue", [_mixed_queue, _held_only_queue, _plain_held_queue])
@pytest.mark.parametrize("states", [{"expired"}, {"inflight"}, {"inflight", "expired"}])
def test_the_vsqs_requeue_by_state_does_what_a_requeue_of_its_held_messages_does(tmp_path, monkeypatch, states,
                                                                                 queue):
    """VSQS picks a requeue by state from one listing (no Message, no scan): the same
    outcomes, in id order, and the same queue after it as the generic way (the held
    messages, then requeue); a link and a FIFO named like expired messages are left alone.
    The plain queue (no link there) takes the short way, with no count in the batch."""
    from collections import Counter

    from qconsole.backends.base import Backend
    from qconsole.backends.vsqs import layout as vsqs_layout

    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret").write_text("not a message")
    queue(tmp_path / "lean", "vsqs") if queue is _mixed_queue else queue(tmp_path / "lean")
    shutil.copytree(tmp_path / "lean", tmp_path / "generic")  # the same deadlines on both sides
    plain = queue is _plain_held_queue
    if not plain:
        for side in ("lean", "generic"):
            os.symlink(outside / "secret", tmp_path / side / "q" / f"{BASE + 990}.{PAST}")
            os.mkfifo(tmp_path / side / "q" / f"{BASE + 991}.{PAST}")
    generic = open_target(str(tmp_path / "generic"))
    want = Backend.requeue_held(generic, "q", frozenset(states))

    def no_message(*_a, **_kw):
        raise AssertionError("a Message was built")

    counted = []

    class SpyCounter(Counter):
        def __init__(self, *args, **kwargs):
            counted.append(True)
            super().__init__(*args, **kwargs)

    lean = open_target(str(tmp_path / "lean"))
    monkeypatch.setattr(vsqs_layout, "Message", no_message)
    monkeypatch.setattr("collections.Counter", SpyCounter)
    got = lean.requeue_held("q", frozenset(states))
    assert sorted(got) == sorted(want)
    assert [mid for mid, _why in got] == sorted((mid for mid, _why in got), key=int)
    # skipped: BASE+7 (under two names) and BASE+9 (also ready), both expired
    skipped = sorted(mid for mid, why in got if why is not None)
    assert len(got) > 50 and skipped == ([str(BASE + 7), str(BASE + 9)] if queue is _held_only_queue and "expired"
                                         in states else [])
    assert sorted(os.listdir(tmp_path / "lean" / "q")) == sorted(os.listdir(tmp_path / "generic" / "q"))
    assert bool(counted) is not plain  # the batch counted the names only where the listing was not plain
    if not plain:
        assert os.readlink(tmp_path / "lean" / "q" / f"{BASE + 990}.{PAST}") == str(outside / "secret")
    assert (outside / "secret").read_text() == "not a message"


def test_a_requeue_by_state_of_a_queue_that_cannot_be_listed_fails_in_words(tmp_path, monkeypatch):
    """The held listing fails (permission denied; we run as root, so it is made to): the
    requeue raises the OSError, which the CLI prints in one line, and the audit log says so."""
    from qconsole.backends.vsqs import layout as vsqs_layout

    root = _vsqs_root(tmp_path, 3)

    def denied(path, *_a):
        raise PermissionError(errno.EACCES, "Permission denied", str(path))

    monkeypatch.setattr(vsqs_layout, "listing", denied)
    monkeypatch.setattr(listing_module, "listing", denied)  # (what Confined.listing calls)
    monkeypatch.setattr(safety.Confined, "listdir", lambda self, path: denied(path))
    audit = tmp_path / "audit"
    with pytest.raises(PermissionError):
        Operations(open_target(root, "vsqs"), audit_log=str(audit)).requeue("q", expired_only=True)
    assert '"outcome": "error"' in audit.read_text()
    assert sorted(os.listdir(os.path.join(root, "q"))) == [str(BASE + i) for i in range(3)]


def test_the_reports_columns_hold_the_collected_scans_messages(tmp_path):
    """collect="columns" (the report's listing) builds its held part from the requeue's columns:
    every message of a collected scan, field for field."""
    _mixed_queue(tmp_path, "vsqs", seed=5)
    target = open_target(str(tmp_path))
    full = target.scan_queue("q", collect=True).messages
    cols = target.scan_queue("q", collect="columns").messages
    fields = ("id", "state", "relpath", "priority", "created_at", "deadline")
    rows = sorted(zip(*(getattr(cols, f) for f in fields)))
    assert rows == sorted(tuple(getattr(m, f) for f in fields) for m in full)


def test_a_signal_during_a_rename_still_leaves_the_file_in_the_manifest(tmp_path, monkeypatch):
    """ctrl+c arriving during a rename is raised as the call returns, before the batch records
    it: the manifest is then made from the trash's own listing, so it names every file."""
    root = _vsqs_root(tmp_path, 50)
    real, calls = os.rename, []

    def rename_then_stop(src, dst, *a, **kw):
        real(src, dst, *a, **kw)
        calls.append(src)
        if len(calls) == 5:
            raise KeyboardInterrupt

    monkeypatch.setattr(os, "rename", rename_then_stop)
    with pytest.raises(KeyboardInterrupt):
        Operations(open_target(root), audit_log=str(tmp_path / "audit")).purge("q")
    monkeypatch.setattr(os, "rename", real)
    with safety.Confined(root) as c:
        (batch,) = trash.batch_names(c)
    with open(os.path.join(trash.batch_dir(root, batch), trash.MANIFEST)) as fh:
        doc = json.load(fh)  # the whole record (readers take the head only)
    held = set(os.listdir(os.path.join(trash.batch_dir(root, batch), trash.FILES, "q"))) - {"work"}
    assert len(held) == 5
    assert {item["relpath"] for item in doc["items"]} == held
    assert {item["id"] for item in doc["items"]} == held


def test_progress_goes_up_one_by_one_where_there_is_no_renameat2(tmp_path, monkeypatch):
    """Without renameat2 every message takes the one-name path: the progress line still moves."""
    monkeypatch.setattr(safety, "_RENAMEAT2", False)
    n = 300
    q = tmp_path / "root" / "q"
    q.mkdir(parents=True)
    for i in range(n):
        (q / f"{BASE + i}.{PAST}").write_text("x")
    ops = Operations(open_target(str(tmp_path / "root")), audit_log=str(tmp_path / "audit"))
    for what in ("requeue", "restore"):
        if what == "restore":
            ops.root.progress = None
            ops.purge("q")
        ticks = []
        ops.root.progress = lambda done, total: ticks.append(done)
        ops.requeue("q", expired_only=True) if what == "requeue" else ops.trash_restore()
        assert ticks == sorted(ticks) and ticks[-1] == n and len(set(ticks)) > n // 2, ticks[:5]


def test_batch_names_are_encoded_as_fsencode_encodes_each():
    """The batch renames encode a batch's names in one go: byte for byte os.fsencode's."""
    from qconsole.backends.fs.safety import _encoded

    names = ["1700000000123", "caf\u00e9", "\udcff\udc80raw", "\u4e2d\u6587.1", "a b", "x" * 63, "\U0001f600"]
    assert _encoded(names) == [os.fsencode(n) for n in names]
    assert _encoded([]) == []
    assert _encoded([""]) == [b""]
