"""A message replaced by a FIFO of its name leaves the console's list at the next relisting
(hunt B #13), also when a planted name of non-ASCII digits sits in an earlier chunk of the
listing: the typed check stopped at it, and the FIFO in a later chunk stayed a ready row
(review D)."""

from __future__ import annotations

import os
import time

from qconsole.backends.fs import sorted_names as sn
from qconsole.backends.vsqs.columns import list_columns

BASE = 1_700_000_000_000_000


def test_a_fifo_after_a_planted_name_of_other_digits_leaves_the_list(tmp_path, monkeypatch):
    q = tmp_path / "q"
    q.mkdir()
    for i in range(3000):
        (q / str(BASE + i)).touch()
    (q / "\u0661\u0662\u0663").touch()  # Arabic-Indic digits: str.isdigit() is True
    order = os.listdir(q)  # (the file system's order: the planted name ends the first chunk)
    planted = order.index("\u0661\u0662\u0663")
    if planted == len(order) - 1:
        (q / "\u0661\u0662\u0663").unlink()
        (q / "\u0662\u0661").touch()
        order = os.listdir(q)
        planted = order.index("\u0662\u0661")
    assert planted < len(order) - 1
    monkeypatch.setattr(sn, "CHUNK", planted + 1)
    victim = order[-1]
    first = list_columns(str(tmp_path), "q", time.time())
    assert victim in set(first.ids[: first.ready_n])
    os.unlink(q / victim)
    os.mkfifo(q / victim)
    second = list_columns(str(tmp_path), "q", time.time(), previous=first)
    assert victim not in set(second.ids[: second.ready_n]), "the FIFO is still a ready row"
    assert second.scan.counts["ready"] == 2999
    assert any(e.startswith(f"{victim}: named like a message but not a regular file") for e in second.scan.errors)
