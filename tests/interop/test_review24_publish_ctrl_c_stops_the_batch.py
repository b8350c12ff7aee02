"""Review 24: since e83660e publish holds ctrl+c for a whole batch; a ctrl+c at a batch's first
copy then wrote, synced and published all 256 copies before it was raised (256 copies of a
4 MB payload: published, 6 s after the ctrl+c; at b020a64 it stopped in 0.09 s with nothing
published). The hold must stop the batch at the next copy: nothing more written, nothing of the
batch published, nothing left behind."""

from __future__ import annotations

import os
import signal

import pytest

from qconsole.backends import open_target
from qconsole.backends.fs import safety
from qconsole.backends.fs.publish_batches import PUBLISH_BATCH
from qconsole.ops import Operations
from sigint_helper import restore_sigint

N = PUBLISH_BATCH + 10


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
@pytest.mark.parametrize("layout", ["vsqs", "ddmq"])
def test_a_ctrl_c_at_a_batchs_second_copy_stops_it_there(tmp_path, monkeypatch, layout, sig):
    root = str(tmp_path / "r")
    os.makedirs(os.path.join(root, "q", "work") if layout == "ddmq" else os.path.join(root, "q"))
    if layout == "ddmq":
        open(os.path.join(root, "q", "ddmq.yaml"), "w").close()
    creates = [0]
    # the copies' creates (ddmq's, and VSQS's temp files): through InDir
    real_create = safety.InDir.create

    def counted(n: int) -> None:
        creates[0] += 1
        if creates[0] == 2:
            os.kill(os.getpid(), sig)  # (handled at the next bytecode: held)

    def create(self, *a, **k):
        fd = real_create(self, *a, **k)
        counted(1)
        return fd

    monkeypatch.setattr(safety.InDir, "create", create)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)  # Python's own, as in `qconsole`
    previous_term = signal.signal(signal.SIGTERM, signal.SIG_DFL)  # (publish takes it as ctrl+c)
    try:
        with pytest.raises(KeyboardInterrupt) as info:
            Operations(open_target(root), audit_log=str(tmp_path / "audit.log")).publish("q", [b'"x"'] * N)
    finally:
        signal.signal(signal.SIGTERM, previous_term)
        restore_sigint(previous)
    assert creates[0] <= 3, f"{creates[0]} copies written after a ctrl+c at the second"
    names = [n for n in os.listdir(os.path.join(root, "q")) if n not in ("work", "ddmq.yaml")]
    assert names == [], f"{len(names)} names left, e.g. {sorted(names)[:3]}"
    partial = getattr(info.value, "partial", None)
    assert partial is None or not partial.done
