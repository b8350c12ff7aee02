"""A `recover` killed at each of its own file-system calls (a second kill -9, or the host
going down, while it puts a killed move's messages back): the next `recover` must settle
every message with no problem left (each message in exactly one place, no leftover)."""

from __future__ import annotations

import os

import pytest

from ops_inventory import inventory
from test_batch_crash import CALLS, _action, _consume_some, _fail_at, _ops, _root, _settled
from qconsole.backends import open_target


#: the move's file-system call it is killed before: its second batch's journal is written
#: (each listing of a queue opens and closes its directory: two calls more per listing since
#: session 23, which opens it without following a link; a batch's barrier is one syncfs, not
#: an fsync per file, since session 24)
KILL_MOVE_AT = {"ddmq": 54, "vsqs": 56}


def _recover_dies_at(root: str, n: int) -> str:
    """A recover in a forked child killed just before its n-th file-system call: 'died' or 'done'."""
    return _fail_at(n, lambda: _ops(root).recover(), "exit", type(open_target(root)))


@pytest.mark.parametrize("layout", ["ddmq", "vsqs"])
def test_a_recover_killed_anywhere_is_finished_by_the_next(tmp_path, layout):
    """Seen: recover killed between putting a message back (link) and dropping its claim
    (unlink) -- it had dropped the copy first -- left a claim every later recover reported as
    "its journal's commit source is gone and no committed copy is live; left alone" (exit 1),
    for good: a second name of a live message that an operator "fixing" it could duplicate."""
    root, expected = _root(tmp_path, layout)
    cls = type(open_target(root))
    action = "move"
    died = 0
    for n in range(1, 200):
        _consume_some(root, layout)
        # a move killed with its second batch's journal, claims and copies in place
        # (the count of calls before the second batch's journal shifts by a few with what the
        # consumers took: a move that ended first, or died before that journal, is settled and tried again)
        moved = _fail_at(KILL_MOVE_AT[layout], _action(root, action), "exit", cls)
        assert moved in ("died", "done"), moved
        _found, odd = inventory(root, layout)
        if not (any(".qconsole-batch-" in x for x in odd) and any(".qconsole-claim-" in x for x in odd)):
            _settled(root, layout, expected)
            continue
        if _recover_dies_at(root, n) == "done":
            break
        died += 1
        lock = os.path.join(root, ".qconsole", "recover.lock")
        if os.path.exists(lock) and os.path.getsize(lock) == 0:
            os.unlink(lock)  # killed between its create and its write: broken after 5 minutes
        _settled(root, layout, expected)
    assert died > 5, died
