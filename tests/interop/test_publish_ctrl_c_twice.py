"""ctrl+c pressed twice during `publish -n N` (race review): the second one landed while the
first one's take-back was unlinking the batch's unpublished copies, and cut it short. On VSQS
that left up to a batch of ``<id>.new`` files in the queue that nothing ever removes (neither
client takes them, `recover` cannot tell them from a vsqs publisher's own), counted as
``writing`` for good; on ddmq, qconsole temp files until a `recover`."""

from __future__ import annotations

import os
import signal

import pytest

from qconsole.backends import open_target
from qconsole.backends.fs import safety
from qconsole.backends.fs.publish_batches import PUBLISH_BATCH
from qconsole.ops import Operations
from sigint_helper import restore_sigint
from sync_hooks import SYNC_MODES, hook_sync

N = PUBLISH_BATCH * 3


@pytest.mark.parametrize("mode", SYNC_MODES)
@pytest.mark.parametrize("layout", ["vsqs", "ddmq"])
def test_a_second_ctrl_c_during_the_take_back_leaves_no_unpublished_copy(tmp_path, monkeypatch, layout, mode):
    root = str(tmp_path / "r")
    os.makedirs(os.path.join(root, "q", "work") if layout == "ddmq" else os.path.join(root, "q"))
    if layout == "ddmq":
        open(os.path.join(root, "q", "ddmq.yaml"), "w").close()
    real_unlink = safety.InDir.unlink
    state = {"first": False, "second": False}

    def before(batch, _fd):  # the first ctrl+c: at the second batch's barrier
        if batch > 1:
            state["first"] = True
            raise KeyboardInterrupt

    def unlink(self, path, *args, **kwargs):  # the second: as the take-back starts
        if state["first"] and not state["second"]:
            state["second"] = True
            os.kill(os.getpid(), signal.SIGINT)
        return real_unlink(self, path, *args, **kwargs)

    hook_sync(monkeypatch, mode, PUBLISH_BATCH, before)
    monkeypatch.setattr(safety.InDir, "unlink", unlink)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)  # Python's own, as in `qconsole`
    try:
        with pytest.raises(KeyboardInterrupt) as info:
            Operations(open_target(root), audit_log=str(tmp_path / "audit.log")).publish("q", [b'"x"'] * N)
    finally:
        restore_sigint(previous)
    assert state["second"]
    names = os.listdir(os.path.join(root, "q"))
    left = [n for n in names if n.endswith(".new") or n.startswith(".")]
    assert not left, f"{len(left)} unpublished copies left, e.g. {sorted(left)[:3]}"
    published = [n for n in names if n not in ("work", "ddmq.yaml")]
    assert len(published) == PUBLISH_BATCH
    partial = getattr(info.value, "partial", None)
    assert partial is not None and len(partial.done) == PUBLISH_BATCH
