"""ctrl+c while a batch of a move or requeue is committed (fs/batches.py): it is held for the
batch's renames and claim drops, so no entry is left renamed with its claim still there (for
`recover` to judge), and raised once the caller has counted the batch: the line and the audit
record count every message that moved, and the rest is put back."""

from __future__ import annotations

import json
import os
import signal
from collections import Counter

import pytest

from qconsole.backends import open_target
from qconsole.backends.fs import safety
from qconsole.ops import Operations
from sigint_helper import restore_sigint
from test_transfer_ctrl_c_twice import N, _inventory, _root


# the 10th commit rename: the first batch's, committed by add(); the 266th: the second's,
# committed by flush() with the last (short) batch still to go
@pytest.mark.parametrize("at,committed", [(10, 256), (266, 512)])
@pytest.mark.parametrize("layout,action", [("vsqs", "move"), ("ddmq", "move"), ("ddmq", "requeue")])
def test_ctrl_c_during_a_commit_finishes_the_batch_counts_it_and_puts_the_rest_back(tmp_path, monkeypatch,
                                                                                     layout, action, at, committed):
    root = _root(tmp_path, layout)
    real_rename, renames = safety.InDir.rename, [0]

    def rename(self, src, dst):
        if not dst.startswith(".qconsole-"):  # a commit rename (a claim's goes to .qconsole-claim-...)
            renames[0] += 1
            if renames[0] == at:
                os.kill(os.getpid(), signal.SIGINT)
        return real_rename(self, src, dst)

    monkeypatch.setattr(safety.InDir, "rename", rename)
    audit = str(tmp_path / "audit.log")
    ops = Operations(open_target(root), audit_log=audit)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            if action == "move":
                ops.move("q", "d", all_=True)
            else:
                ops.requeue("q", all_held=True)
    finally:
        restore_sigint(previous)
    texts, left = _inventory(root)
    assert not left, f"left for recover: {sorted(left)[:3]}"
    assert texts == Counter(f"m-{i}" for i in range(N))  # each message once
    rec = json.loads(open(audit).read().splitlines()[-1])
    assert rec["outcome"] == "interrupted" and rec["count"] == committed, rec
    if action == "move":
        moved = [n for n in os.listdir(os.path.join(root, "d")) if n not in ("work", "ddmq.yaml")]
        assert len(moved) == committed
    else:
        ready = [n for n in os.listdir(os.path.join(root, "q")) if ".ddmq" in n]
        assert len(ready) == committed
