"""ctrl+c pressed twice during a bulk move or requeue (race review): the second one landed
while the first one's abort was putting the batch's claimed messages back, and cut it short.
`move q d` then ended with exit 130 and `interrupted: move q to d: 2816 done`, while hundreds of
messages stayed hidden under `.qconsole-claim-…` names (no consumer takes them) beside their
temp copies, with no word of it: only a `qconsole recover` the operator had no reason to run
brought them back. The abort now holds a further ctrl+c until every message is back."""

from __future__ import annotations

import json
import os
import signal
from collections import Counter

import pytest

from qconsole.backends import open_target
from qconsole.backends.fs import batches, claims
from qconsole.ops import Operations
from sigint_helper import restore_sigint
from sync_hooks import SYNC_MODES, hook_sync

N = 700  # batches of 256: the interrupt lands in the second one


def _root(tmp_path, layout: str) -> str:
    root = str(tmp_path / "r")
    if layout == "ddmq":
        os.makedirs(root)
        open(os.path.join(root, "ddmq.yaml"), "w").close()
    for q in ("q", "d"):
        qd = os.path.join(root, q)
        os.makedirs(os.path.join(qd, "work") if layout == "ddmq" else qd)
        if layout == "ddmq":
            with open(os.path.join(qd, "ddmq.yaml"), "w") as fh:
                fh.write("cleaned: 0\nmessage_timeout: 600\npriority: 999\nrequeue: true\nrequeue_prio: 0\n")
    for i in range(N):
        text = f"m-{i}"
        if layout == "vsqs":
            name, data = str(1_700_000_000_000_000 + i), text.encode()
        else:
            uid, qn = f"{i:032x}", f"1700000000{i:06d}"
            name = f"work/1700000000.999.{qn}.ddmq{uid}"  # expired: requeue takes it too
            data = json.dumps({"message": text, "queue": "q", "timeout": None, "id": uid, "priority": 999,
                               "queue_number": qn, "filename": f"999.{qn}.ddmq{uid}", "requeue": True,
                               "requeue_counter": 0, "requeue_limit": None}).encode()
        with open(os.path.join(root, "q", name), "wb") as fh:
            fh.write(data)
    return root


def _inventory(root: str) -> tuple[Counter, list[str]]:
    texts: Counter = Counter()
    left = []
    for dirpath, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d != ".qconsole"]
        for f in files:
            if f.startswith(".qconsole-"):
                left.append(os.path.relpath(os.path.join(dirpath, f), root))
            elif f != "ddmq.yaml" and not f.endswith(".new"):
                with open(os.path.join(dirpath, f), "rb") as fh:
                    data = fh.read()
                texts[json.loads(data)["message"] if data.startswith(b"{") else data.decode()] += 1
    return texts, left


@pytest.mark.parametrize("mode", SYNC_MODES)
@pytest.mark.parametrize("layout,action", [("vsqs", "move"), ("ddmq", "move"), ("ddmq", "requeue")])
def test_a_second_ctrl_c_during_the_abort_leaves_no_message_claimed(tmp_path, monkeypatch, layout, action, mode):
    root = _root(tmp_path, layout)
    real_restore = claims.Claim.restore
    state = {"first": False, "second": False}

    def before(batch, _fd):  # the first ctrl+c: at the second batch's barrier
        if batch > 1:
            state["first"] = True
            raise KeyboardInterrupt

    def restore(self):  # the second: as the abort puts the first message back
        if state["first"] and not state["second"]:
            state["second"] = True
            os.kill(os.getpid(), signal.SIGINT)
        return real_restore(self)

    hook_sync(monkeypatch, mode, batches.BATCH_SIZE, before)
    monkeypatch.setattr(claims.Claim, "restore", restore)
    ops = Operations(open_target(root), audit_log=str(tmp_path / "audit.log"))
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)  # Python's own, as in `qconsole`
    try:
        with pytest.raises(KeyboardInterrupt):
            if action == "move":
                ops.move("q", "d", all_=True)
            else:
                ops.requeue("q", all_held=True)
    finally:
        restore_sigint(previous)
    assert state["second"]
    texts, left = _inventory(root)
    assert not left, f"{len(left)} qconsole leftovers (messages hidden from every consumer), e.g. {sorted(left)[:3]}"
    assert texts == Counter(f"m-{i}" for i in range(N))


@pytest.mark.parametrize("mode", SYNC_MODES)
@pytest.mark.parametrize("at", [1, 200, 257, 300, 513])
@pytest.mark.parametrize("layout", ["vsqs", "ddmq"])
def test_ctrl_c_while_the_pools_work_never_hangs_nor_hides_a_message(tmp_path, monkeypatch, layout, at, mode):
    """A real SIGINT sent while fsync workers run, the main thread preparing, submitting or
    waiting: raised inside an executor's submit or shutdown it could leave the pool's lock held
    and the abort's shutdown waiting for good (as publish's barrier did); both are held now."""
    import threading
    import time

    root = _root(tmp_path, layout)
    main = threading.main_thread().ident
    # the at-th file's sync: of its batch, once per batch (syncfs) or that file (fsync)
    batch_at, calls = (at - 1) // batches.BATCH_SIZE + 1, [0]

    def before(batch, _fd):
        calls[0] += 1
        if (calls[0] == at) if mode == "fsync" else (batch == batch_at):
            signal.pthread_kill(main, signal.SIGINT)
            time.sleep(0.01)

    hook_sync(monkeypatch, mode, batches.BATCH_SIZE, before)
    ops = Operations(open_target(root), audit_log=str(tmp_path / "audit.log"))
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            ops.move("q", "d", all_=True)
    finally:
        restore_sigint(previous)
    texts, left = _inventory(root)
    assert texts == Counter(f"m-{i}" for i in range(N))
    # a committed entry whose claim was not dropped yet is recover's (said so by the interrupt line)
    if left:
        rep = ops.recover(force=True)
        assert not rep.problems, rep.problems
        texts, left = _inventory(root)
        assert not left and texts == Counter(f"m-{i}" for i in range(N))
