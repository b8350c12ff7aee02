"""Review of publish batches (32eac71): a publish stopped in its first batch published nothing
(what it had written is taken back), so it must say so -- not 'stopped after about N of M (done
or skipped; not recorded one by one)', which read as N messages published: a publish records
its ids one by one, so the progress tick (copies written, not yet published) is no measure of
what it did."""

from __future__ import annotations

import json
import os

import pytest

from qconsole import errors
from qconsole.backends import open_target
from qconsole.ops.operations import Operations


@pytest.mark.parametrize("layout", ["vsqs", "ddmq"])
def test_a_publish_stopped_in_its_first_batch_does_not_claim_progress(tmp_path, layout):
    root = tmp_path / "r"
    (root / "q").mkdir(parents=True)
    if layout == "ddmq":
        (root / "q" / "work").mkdir()
        (root / "q" / "ddmq.yaml").write_text("")
    ops = Operations(open_target(str(root)), audit_log=str(tmp_path / "audit"))

    def tick(n: int, _total: int) -> None:
        if n >= 40:
            raise KeyboardInterrupt

    ops.root.progress = tick
    with pytest.raises(KeyboardInterrupt) as info:
        ops.publish("q", [b'"x"'] * 100)
    on_disk = [n for n in os.listdir(root / "q") if n not in ("work", "ddmq.yaml")]
    assert on_disk == []
    rec = json.loads((tmp_path / "audit").read_text().splitlines()[-1])
    assert rec["outcome"] == "interrupted" and rec["count"] == 0 and "processed" not in rec, rec
    part = getattr(info.value, "partial", None)
    assert part is None or (not part.done and part.processed is None), part
    assert "stopped after about" not in (errors.interrupted_line(info.value) or "")
