"""Batched transfers (one journal per batch, :mod:`qconsole.backends.fs.batches`) at every
crash point, with batches of 3 so a run holds several full batches and a partial one.

* a forked child dies (``os._exit``) just before its n-th file-system call, for every n until
  the operation completes; then ``recover`` must leave every message in exactly one place
  and no qconsole leftover;
* the same with an exception (``KeyboardInterrupt``, as ctrl+c) raised instead: the process
  undoes what it can itself, and recover settles the rest;
* a live operator's batch is left alone by another qconsole's recover until it dies.
"""

from __future__ import annotations

import os
import signal
import time

import pytest

from ops_inventory import inventory
from peers import ddmq_broker
from qconsole.backends import open_target
from qconsole.backends.fs import batches, durable
from qconsole.ops import Operations
from sync_hooks import SYNC_MODES, hook_sync

N = 7
CALLS = ("rename", "link", "unlink", "open", "write", "fsync", "listdir", "close")


def _ops(root: str) -> Operations:
    return Operations(open_target(root), audit_log=os.path.join(root, "..", "audit.log"))


def _root(tmp_path, layout: str, n: int = N) -> tuple[str, set[str]]:
    root = str(tmp_path / layout)
    if layout == "ddmq":
        broker = ddmq_broker(root, "src", "dst")
        for i in range(n):
            broker.publish("src", f"b-{i}", clean=False)
    else:
        for q in ("src", "dst"):
            os.makedirs(os.path.join(root, q))
        _ops(root).publish("src", [f"b-{i}".encode() for i in range(n)])
    return root, {f"b-{i}" for i in range(n)}


def _consume_some(root: str, layout: str) -> None:
    """Real consumers hold five of the messages in src (expired or in flight)."""
    if layout == "ddmq":
        ddmq_broker(root).consume("src", n=5, clean=False)
        return
    qdir = os.path.join(root, "src")
    for i, name in enumerate(sorted(x for x in os.listdir(qdir) if x.isdigit())[:5]):
        deadline = int(time.time() * 1e6) + (-10**6 if i % 2 else 10**9)
        os.rename(os.path.join(qdir, name), os.path.join(qdir, f"{name}.{deadline}"))


def _action(root: str, action: str):
    ops = _ops(root)
    return {"requeue": lambda: ops.requeue("src", all_held=True),
            "move": lambda: ops.move("src", "dst", all_=True),
            "move_back": lambda: ops.move("dst", "src", all_=True)}[action]


def _fail_at(n: int, fn, how: str, cls: type, then: int | None = None) -> str:
    """Run ``fn`` in a forked child whose n-th file-system call dies (``exit``) or raises
    KeyboardInterrupt (``raise``); with ``then``, the ``then``-th call dies too (a kill
    while the ctrl+c's clean-up runs); 'died', 'raised' or 'done'."""
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            cls.REQUEUE_BATCH = cls.MOVE_BATCH = 3  # several full batches and a partial one
            calls = [0]

            def wrap(real):
                def inner(*a, **k):
                    calls[0] += 1
                    if calls[0] == then:
                        os._exit(9)
                    if calls[0] == n:
                        if how == "exit":
                            os._exit(9)
                        raise KeyboardInterrupt
                    return real(*a, **k)
                return inner

            for name in CALLS:
                setattr(os, name, wrap(getattr(os, name)))
            if durable.syncfs_call() is not None:  # a batch's barrier (a libc call, not os's)
                durable._SYNCFS[:] = [wrap(durable.syncfs_call())]
            try:
                fn()
            except KeyboardInterrupt:
                code = 8
        finally:
            os._exit(code)
    _pid, status = os.waitpid(pid, 0)
    return {9: "died", 8: "raised", 0: "done"}.get(os.waitstatus_to_exitcode(status), "error")


def _settled(root: str, layout: str, expected: set[str]) -> None:
    rep = _ops(root).recover()
    assert not rep.problems and not rep.live, (rep.problems, rep.live)
    found, odd = inventory(root, layout)
    assert not odd, odd
    assert set(found) == expected, (expected - set(found), set(found) - expected)
    assert set(found.values()) == {1}, {k: v for k, v in found.items() if v != 1}
    left = [n for q in ("src", "dst") for d in (q, f"{q}/work") if os.path.isdir(os.path.join(root, d))
            for n in os.listdir(os.path.join(root, d)) if n.startswith(".qconsole-")]
    assert not left, left


@pytest.mark.parametrize("how", ["exit", "raise"])
@pytest.mark.parametrize("layout", ["ddmq", "vsqs"])
def test_every_crash_point_of_a_batched_transfer(tmp_path, layout, how):
    root, expected = _root(tmp_path, layout)
    cls = type(open_target(root))
    points = {"died": 0, "raised": 0}
    actions = ("requeue", "move", "move_back") if layout == "ddmq" else ("move", "move_back")
    for action in actions:
        n = 1
        while True:
            _consume_some(root, layout)
            outcome = _fail_at(n, _action(root, action), how, cls)
            assert outcome in ("died", "raised", "done"), outcome
            _settled(root, layout, expected)
            if outcome == "done":
                break
            points[outcome] += 1
            n += 1
    # 7 messages in batches of 3: dozens of points per action, every step of every batch
    assert sum(points.values()) > 60 * len(actions) // 2, points


@pytest.mark.parametrize("layout", ["ddmq", "vsqs"])
def test_a_kill_during_the_clean_up_after_ctrl_c_still_settles(tmp_path, layout):
    """ctrl+c, then a kill while the batch puts its messages back: recover settles every
    message (the message goes back before its copy is dropped, so a death in between leaves
    a copy without a claim, never a claim without a copy)."""
    root, expected = _root(tmp_path, layout)
    cls = type(open_target(root))
    runs = 0
    for action in ("requeue", "move") if layout == "ddmq" else ("move",):
        for n in range(20, 90, 9):
            for k in range(1, 6):
                _consume_some(root, layout)
                outcome = _fail_at(n, _action(root, action), "raise", cls, then=n + k)
                assert outcome in ("died", "raised", "done"), outcome
                _settled(root, layout, expected)
                runs += outcome == "died"
    assert runs > 10, runs


def test_batches_leave_no_journal_and_keep_order(tmp_path, monkeypatch):
    """A move of several batches: no journal left, DEST holds the messages in publish order."""
    root, expected = _root(tmp_path, "vsqs")
    monkeypatch.setattr(type(open_target(root)), "MOVE_BATCH", 3)
    res = _ops(root).move("src", "dst", all_=True)
    assert len(res.done) == N and not res.skipped
    names = sorted(os.listdir(os.path.join(root, "dst")), key=int)
    assert [open(os.path.join(root, "dst", n)).read() for n in names] == [f"b-{i}" for i in range(N)]
    assert not [n for n in os.listdir(os.path.join(root, "src")) if n.startswith(".qconsole-")]


def test_recover_leaves_a_live_operators_batch_alone(tmp_path):
    """Another qconsole's recover, while the operator's batch is mid-commit, touches nothing
    of it; once that process is gone, recover settles it."""
    root, expected = _root(tmp_path, "ddmq")
    _consume_some(root, "ddmq")
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(r)
            real = batches.BatchWriter._write_journal

            def paused(self, entries):
                path = real(self, entries)
                os.write(w, b"x")
                time.sleep(60)  # killed here: journal written, nothing committed
                return path

            batches.BatchWriter._write_journal = paused
            _ops(root).requeue("src", all_held=True)
        finally:
            os._exit(0)
    os.close(w)
    assert os.read(r, 1) == b"x"
    try:
        before = sorted(os.listdir(os.path.join(root, "src"))), sorted(os.listdir(os.path.join(root, "src", "work")))
        assert any(n.startswith(".qconsole-batch-") for n in before[0])
        rep = _ops(root).recover()
        assert rep.live and not rep.restored and not rep.completed and not rep.problems
        after = sorted(os.listdir(os.path.join(root, "src"))), sorted(os.listdir(os.path.join(root, "src", "work")))
        assert after == before
    finally:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    rep = _ops(root).recover()
    assert len(rep.restored) == 5 and not rep.problems
    _settled(root, "ddmq", expected)


DEAD_PID = 4194303


@pytest.mark.parametrize("committed", [False, True])
def test_an_older_qconsoles_per_message_journal_is_still_recovered(tmp_path, committed):
    """What a per-message-journal qconsole left when killed mid-requeue (claim in work/, tmp,
    journal beside the claim): recover puts the message back, or finishes the requeue."""
    import json

    from qconsole.backends.fs.claims import HOST, encode_rel

    root = str(tmp_path / "d")
    b = ddmq_broker(root, "q")
    b.publish("q", "old-1", clean=False)
    b.consume("q", clean=False)
    qdir = os.path.join(root, "q")
    name = os.listdir(os.path.join(qdir, "work"))[0]
    tok = "0defaced"
    claim = f".qconsole-claim-{HOST}-{DEAD_PID}-{tok}-{encode_rel('work/' + name)}"
    os.rename(os.path.join(qdir, "work", name), os.path.join(qdir, "work", claim))
    body = json.load(open(os.path.join(qdir, "work", claim)))
    uid = name.rpartition(".ddmq")[2]
    final = f"0.{int(time.time() * 1e6)}.ddmq{uid}"
    body.update(filename=final, priority=0, requeue_counter=1)
    tmp = f".qconsole-tmp-{HOST}-{DEAD_PID}-{tok}"
    with open(os.path.join(qdir, tmp), "w") as fh:
        json.dump(body, fh)
    with open(os.path.join(qdir, "work", f".qconsole-journal-{HOST}-{DEAD_PID}-{tok}"), "w") as fh:
        json.dump({"token": tok, "src": f"work/{name}", "dest": "q", "commit_from": tmp, "final": final,
                   "tmp": tmp}, fh)
    if committed:
        os.rename(os.path.join(qdir, tmp), os.path.join(qdir, final))
    rep = _ops(root).recover()
    assert not rep.problems and not rep.live
    assert (len(rep.completed), len(rep.restored)) == ((1, 0) if committed else (0, 1))
    found, odd = inventory(root, "ddmq")
    assert not odd and found == {"old-1": 1}
    names = os.listdir(qdir) + os.listdir(os.path.join(qdir, "work"))
    assert not [n for n in names if n.startswith(".qconsole-")], names
    assert (final in names) == committed and (name in names) != committed


def test_vsqs_move_clash_check_per_batch_replaces_a_clashing_id(tmp_path, monkeypatch):
    """The publish protocol's clash check, made once per batch: an id live in DEST in another
    state (a consumer holds <id>.<deadline>) is never reused; the copy gets a new id."""
    from qconsole.backends.vsqs import writes

    root, expected = _root(tmp_path, "vsqs")
    held = "1700000000000005"
    with open(os.path.join(root, "dst", f"{held}.1"), "w") as fh:
        fh.write("held-by-a-consumer")
    real = writes.IdClock.next
    first = [True]

    def clashing(self):
        if first[0]:
            first[0] = False
            self.last = int(held)
            return held  # what a clock could give: an id a consumer holds in DEST
        return real(self)

    monkeypatch.setattr(writes.IdClock, "next", clashing)
    res = _ops(root).move("src", "dst", all_=True)
    assert len(res.done) == N and not res.skipped
    names = os.listdir(os.path.join(root, "dst"))
    assert f"{held}.1" in names and held not in names and not [n for n in names if not n[0].isdigit()]
    assert not [n for n in names if n.endswith(".new")]
    found, odd = inventory(root, "vsqs")
    assert not odd and set(found) == expected | {"held-by-a-consumer"} and set(found.values()) == {1}


def test_a_garbled_journal_of_a_real_crash_changes_nothing(tmp_path):
    """A VSQS move killed right after its first commit, its journal then garbled: recover
    reports it and changes nothing (putting the claim back would make a duplicate, since the
    committed copy has a new id); with the journal mended, recover finishes the batch."""

    root, expected = _root(tmp_path, "vsqs")
    pid = os.fork()
    if pid == 0:
        try:
            real = batches._unlink_all

            def dies_at_first_claim_drop(at):
                if any(".qconsole-claim-" in name for _fd, name in at):
                    os._exit(9)  # the first entry is committed, its claim not yet dropped
                return real(at)

            batches._unlink_all = dies_at_first_claim_drop
            _ops(root).move("src", "dst", all_=True)
        finally:
            os._exit(0)
    _pid, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 9
    src = os.path.join(root, "src")
    journal = [n for n in os.listdir(src) if n.startswith(".qconsole-batch-")]
    assert len(journal) == 1
    jpath = os.path.join(src, journal[0])
    good = open(jpath, "rb").read()
    with open(jpath, "wb") as fh:
        fh.write(good[: len(good) // 2])  # garbled
    listing = lambda: {d: sorted(os.listdir(os.path.join(root, d))) for d in ("src", "dst")}  # noqa: E731
    before = listing()
    rep = _ops(root).recover()
    assert len(rep.problems) == 1 and "batch journal" in rep.problems[0], rep.problems
    assert not rep.restored and not rep.completed and not rep.removed_temp
    assert listing() == before
    found, _odd = inventory(root, "vsqs")
    assert set(found.values()) <= {1}  # nothing live twice
    with open(jpath, "wb") as fh:
        fh.write(good)
    _settled(root, "vsqs", expected)


@pytest.mark.parametrize("mode", SYNC_MODES)
def test_ctrl_c_while_a_batch_is_handed_to_the_sync_threads_puts_every_message_back(tmp_path, monkeypatch, mode):
    """The batch being handed out was in no list abort() reads: 256 claims stayed, hidden from
    consumers until a `recover` (review of the pipelined writer)."""
    root, expected = _root(tmp_path, "ddmq")
    _consume_some(root, "ddmq")
    monkeypatch.setattr(type(open_target(root)), "REQUEUE_BATCH", 2)
    hook_sync(monkeypatch, mode, 2, lambda _batch, _fd: None)
    real_init = batches.BatchWriter.__init__
    submits = [0]
    # ctrl+c mid hand-over of the second batch: its syncfs, or its second copy's fsync
    at = 2 if mode == "syncfs" else 4

    def init(self, *a, **k):
        real_init(self, *a, **k)
        real_submit = self.barrier.pool.submit

        def submit(*sa, **sk):
            submits[0] += 1
            if submits[0] == at:
                raise KeyboardInterrupt
            return real_submit(*sa, **sk)

        self.barrier.pool.submit = submit

    monkeypatch.setattr(batches.BatchWriter, "__init__", init)
    with pytest.raises(KeyboardInterrupt):
        _ops(root).requeue("src", all_held=True)
    left = [n for d in ("src", "src/work") for n in os.listdir(os.path.join(root, d)) if n.startswith(".qconsole-")]
    assert not left, left  # everything put back by the process itself, nothing for recover
    _settled(root, "ddmq", expected)


@pytest.mark.parametrize("layout", ["ddmq", "vsqs"])
def test_commit_renames_run_at_most_a_few_entries_ahead_of_the_claim_drops(tmp_path, monkeypatch, layout):
    """An entry renamed whose claim is not dropped yet is one a kill leaves for recover, which
    cannot settle it once a consumer has taken the copy: each claim goes right after its rename."""
    import threading

    from qconsole.backends.fs import safety

    n = 40
    root, _expected = _root(tmp_path, layout, n)
    state = {"on": False, "renamed": 0, "dropped": 0, "most": 0}
    lock = threading.Lock()
    real_commit, real_rename, real_drop = batches.BatchWriter._commit, safety.InDir.rename, batches._unlink_all

    def commit(self, entries, futures):
        state.update(on=True, renamed=0, dropped=0)
        try:
            return real_commit(self, entries, futures)
        finally:
            state["on"] = False

    def rename(self, src, dst):
        if state["on"]:
            with lock:
                state["renamed"] += 1
                state["most"] = max(state["most"], state["renamed"] - state["dropped"])
        return real_rename(self, src, dst)

    def slow_drop(at):
        time.sleep(0.003)  # a disk freeing blocks slowly
        real_drop(at)
        with lock:
            state["dropped"] += 1

    monkeypatch.setattr(batches.BatchWriter, "_commit", commit)
    monkeypatch.setattr(safety.InDir, "rename", rename)
    monkeypatch.setattr(batches, "_unlink_all", slow_drop)
    res = _ops(root).move("src", "dst", all_=True)
    assert len(res.done) == n
    assert 1 <= state["most"] <= batches.COMMIT_CHUNK, state  # claims dropped after each chunk's fsync
