"""ctrl+c (SIGINT) that lands while a claim's rename syscall runs: Python raises
KeyboardInterrupt as the call returns, so the message is already claimed. It must be put back
by the stopped process itself, not left hidden from every consumer until someone thinks of
running ``recover`` (the interrupted line said nothing about it). Seen with a real SIGINT
into a 50,000-message ``move``: one message of four runs was left under a claim name."""

from __future__ import annotations

import os

import pytest

from ops_inventory import inventory
from test_batch_crash import _action, _consume_some, _root
from qconsole.backends import open_target


def _interrupt_as_nth_claim_returns(n: int, fn, cls: type) -> str:
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            cls.REQUEUE_BATCH = cls.MOVE_BATCH = 3
            real, seen = os.rename, [0]

            def rename(src, dst, **kw):
                out = real(src, dst, **kw)
                if ".qconsole-claim-" in os.fsdecode(dst):
                    seen[0] += 1
                    if seen[0] == n:
                        raise KeyboardInterrupt  # the signal's handler runs as the syscall returns
                return out

            os.rename = rename
            try:
                fn()
            except KeyboardInterrupt:
                code = 8
        finally:
            os._exit(code)
    _pid, status = os.waitpid(pid, 0)
    return {8: "raised", 0: "done"}.get(os.waitstatus_to_exitcode(status), "error")


@pytest.mark.parametrize("layout", ["ddmq", "vsqs"])
def test_ctrl_c_during_a_claim_rename_leaves_no_message_hidden(tmp_path, layout):
    root, expected = _root(tmp_path, layout)
    cls = type(open_target(root))
    for action in ("requeue", "move") if layout == "ddmq" else ("move",):
        for n in (1, 2, 4, 6):
            _consume_some(root, layout)
            assert _interrupt_as_nth_claim_returns(n, _action(root, action), cls) == "raised"
            # no recover run: what the stopped process left is what consumers see
            found, odd = inventory(root, layout)
            claims = [x for x in odd if ".qconsole-claim-" in x]
            assert not claims and set(found) == expected, (action, n, claims, expected - set(found))
            assert set(found.values()) == {1}, (action, n, found)
